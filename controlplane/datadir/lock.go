package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lock is an exclusive advisory lock on a data dir, held for the life
// of the control plane. The kernel releases it when the process dies, so a
// crashed instance never leaves a stale lock behind.
type lock struct {
	file *os.File
}

// lockDataDir takes the lock on dir or fails at once, naming the process that
// holds it. Without it a second instance would block inside etcd's database
// open forever instead of saying why.
func lockDataDir(dir string) (*lock, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: opening lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close() //nolint:errcheck
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if pid == "" {
				pid = "unknown"
			}
			return nil, &dataDirInUseError{dir: dir, pid: pid, lock: path}
		}
		return nil, fmt.Errorf("data dir %s: locking %s: %w", dir, path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lock{file: f}, nil
}

// dataDirInUseError is a data dir locked by a running control plane.
type dataDirInUseError struct {
	dir, pid, lock string
}

// Error says what to do for a control plane that starts on the data dir.
func (e *dataDirInUseError) Error() string {
	return fmt.Sprintf("data dir %s is in use by another sample-generic-controlplane (pid %s, lock %s): stop it or choose another --data-dir", e.dir, e.pid, e.lock)
}

// release drops the lock; the file stays so the next start reuses it.
func (l *lock) release() {
	if l == nil || l.file == nil {
		return
	}
	_ = l.file.Truncate(0)
	l.file.Close() //nolint:errcheck // closing releases the flock
	l.file = nil
}
