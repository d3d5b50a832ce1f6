package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b-linux-amd64", "hello\n")
	write("a-darwin-arm64", "")
	write(sumsFile, "an older sums file is not summed\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	got, err := checksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	// What `sha256sum a-darwin-arm64 b-linux-amd64` prints for these contents.
	want := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  a-darwin-arm64\n" +
		"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  b-linux-amd64\n"
	if got != want {
		t.Errorf("checksums:\n%s\nwant:\n%s", got, want)
	}
}

func TestChecksumsOfAnEmptyDirectory(t *testing.T) {
	if _, err := checksums(t.TempDir()); err == nil {
		t.Error("checksums of an empty directory: no error, want one (make release built nothing)")
	}
}
