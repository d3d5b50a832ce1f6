// Command release-checksums writes SHA256SUMS into a release directory (make
// release): one line per file, "<SHA-256 in hex>  <name>", sorted by name,
// which is what `sha256sum -c SHA256SUMS` and `shasum -a 256 -c SHA256SUMS`
// read. It needs nothing but Go, where sha256sum is GNU coreutils' and shasum
// is Perl's.
//
//	go run ./hack/release-checksums dist
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// sumsFile is the name sha256sum users expect, as Go and Kubernetes releases name it.
const sumsFile = "SHA256SUMS"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: release-checksums DIR")
		os.Exit(2)
	}
	sums, err := checksums(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "release-checksums: %v\n", err)
		os.Exit(1)
	}
	path := filepath.Join(os.Args[1], sumsFile)
	if err := os.WriteFile(path, []byte(sums), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "release-checksums: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s:\n%s", path, sums)
}

// checksums returns the SHA256SUMS lines of the regular files in dir, the
// sums file itself left out.
func checksums(dir string) (string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == sumsFile {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		// Two spaces: the text-mode separator both tools read.
		fmt.Fprintf(&b, "%s  %s\n", sum, e.Name())
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("no files to sum in %s", dir)
	}
	return b.String(), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
