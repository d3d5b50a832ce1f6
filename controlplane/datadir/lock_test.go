package datadir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	pid := strconv.Itoa(os.Getpid())

	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("locking a fresh data dir: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "lock")); err != nil || strings.TrimSpace(string(got)) != pid {
		t.Errorf("lock file holds %q (%v), want this process's pid %s", got, err, pid)
	}

	for range 2 {
		second, err := lockDataDir(dir)
		if err == nil {
			second.release()
			t.Fatal("a second lock on the same data dir succeeded")
		}
		for _, want := range []string{dir, "in use", "pid " + pid, "--data-dir"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("second lock: %q, want it to contain %q", err, want)
			}
		}
	}
	// A failed attempt leaves the holder's pid in place.
	if got, err := os.ReadFile(filepath.Join(dir, "lock")); err != nil || strings.TrimSpace(string(got)) != pid {
		t.Errorf("after a failed attempt the lock file holds %q (%v), want %s", got, err, pid)
	}

	first.release()
	first.release() // idempotent
	if got, err := os.ReadFile(filepath.Join(dir, "lock")); err != nil || len(got) != 0 {
		t.Errorf("after release the lock file holds %q (%v), want it empty", got, err)
	}

	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("locking again after release: %v", err)
	}
	again.release()
	(*lock)(nil).release()
}

func TestLockDataDirHeldElsewhereWithoutPid(t *testing.T) {
	dir := t.TempDir()
	holder, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.release()
	// A holder that crashed between locking and writing its pid.
	if err := os.Truncate(filepath.Join(dir, "lock"), 0); err != nil {
		t.Fatal(err)
	}
	_, err = lockDataDir(dir)
	if err == nil || !strings.Contains(err.Error(), "pid unknown") {
		t.Errorf("lock held by a process that wrote no pid: err = %v, want one with %q", err, "pid unknown")
	}
}

func TestLockDataDirMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	l, err := lockDataDir(dir)
	if err == nil {
		l.release()
		t.Fatal("locking a missing dir succeeded")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name %s", err, dir)
	}
}
