package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	for _, tc := range []struct {
		data string
		mode os.FileMode
	}{
		{"first", 0o600},
		// Replaces the file, its mode included.
		{"second", 0o644},
	} {
		if err := Write(path, []byte(tc.data), tc.mode); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tc.data {
			t.Fatalf("content %q, %v; want %q", got, err, tc.data)
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != tc.mode {
			t.Fatalf("mode %v, %v; want %v", info.Mode().Perm(), err, tc.mode)
		}
	}
	// Nothing but the file is left beside it.
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("dir holds %v, %v; want the file alone", entries, err)
	}
}

// A write that cannot happen leaves the file as it was, and says which.
func TestWriteFailureLeavesThePathAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := Write(path, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked, []byte("x"), 0o600); err == nil {
		t.Fatal("writing over a non-empty directory: no error")
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Fatal("writing into a missing directory: no error")
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "kept" {
		t.Fatalf("content %q, %v; want it kept", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("dir holds %v; want the file and the directory, no temporary file", entries)
	}
}
