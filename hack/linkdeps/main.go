// Command linkdeps tells why the linker keeps a symbol, from the output of
// the linker's -dumpdep flag.
//
// With -dumpdep the linker's dead-code pass prints one "caller -> callee"
// line the first time it marks a symbol reachable, so the lines form a tree
// rooted at "_" (the entry points and init tasks). A symbol is flagged
// <ReflectMethod> when it calls reflect.Value.Method, reflect.Type.Method or
// MethodByName with a name the compiler cannot see: once one of those is
// reachable, the linker keeps every exported method of every reachable type,
// which is most of the release binary's growth (docs/performance.md, "Release
// build"). By default linkdeps prints the chain from the root to each such
// symbol, in the order the linker marked them. A chain marked "direct" is
// made of calls and references only: cutting it is needed. A chain that
// goes from a type to one of its methods ("type:T -> T.M") may exist only
// because an earlier <ReflectMethod> symbol made the linker keep that
// method: cut the direct chains, rebuild and run again to see whether it
// stays.
//
//	go build -ldflags=-dumpdep -o /dev/null ./cmd/sample-generic-controlplane 2>&1 | go run ./hack/linkdeps
//	go run ./hack/linkdeps -target 'text/template' deps.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

const reflectMethodFlag = "<ReflectMethod>"

// graph is the tree -dumpdep prints: each symbol's parent, in marking order.
type graph struct {
	parent  map[string]string
	order   []string        // symbols in the order they were marked
	reflect map[string]bool // symbols flagged <ReflectMethod>
}

func main() {
	target := flag.String("target", "", "print the chain to every symbol matching this regular expression, instead of to the <ReflectMethod> ones")
	limit := flag.Int("n", 0, "print at most this many chains (0: all)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: linkdeps [-target REGEXP] [-n N] [DUMPDEP-FILE]\n\nReads the linker's -dumpdep output (stdin without a file) and prints why each symbol is reachable.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 1 {
		flag.Usage()
		os.Exit(2)
	}
	if flag.NArg() == 1 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			fmt.Fprintf(os.Stderr, "linkdeps: %v\n", err)
			os.Exit(1)
		}
		defer f.Close()
		in = f
	}
	g, err := read(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "linkdeps: %v\n", err)
		os.Exit(1)
	}
	var match func(string) bool
	if *target != "" {
		re, err := regexp.Compile(*target)
		if err != nil {
			fmt.Fprintf(os.Stderr, "linkdeps: -target: %v\n", err)
			os.Exit(2)
		}
		match = re.MatchString
	} else {
		if len(g.reflect) == 0 {
			fmt.Println("no reachable symbol is flagged <ReflectMethod>: the linker drops unused exported methods")
			return
		}
		match = func(s string) bool { return g.reflect[s] }
	}
	n := 0
	for _, s := range g.order {
		if !match(s) {
			continue
		}
		if *limit > 0 && n == *limit {
			break
		}
		n++
		chain := g.chain(s)
		how := "direct"
		if t, m, ok := throughMethod(chain); ok {
			how = "through a kept method: " + t + " -> " + m
		}
		fmt.Printf("%s [%s]\n", s, how)
		for i, c := range chain {
			fmt.Printf("  %s%s\n", strings.Repeat(" ", i), c)
		}
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "linkdeps: no reachable symbol matches")
		os.Exit(1)
	}
}

// read parses "caller -> callee" lines; other lines (the build's own output)
// are skipped.
func read(r io.Reader) (*graph, error) {
	g := &graph{parent: map[string]string{}, reflect: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " -> ")
		if !ok {
			continue
		}
		from, fromReflect := symbol(from)
		to, toReflect := symbol(to)
		if fromReflect {
			g.reflect[from] = true
		}
		if toReflect {
			g.reflect[to] = true
		}
		if _, seen := g.parent[to]; seen {
			continue
		}
		g.parent[to] = from
		g.order = append(g.order, to)
	}
	return g, sc.Err()
}

// symbol strips the flags -dumpdep appends to a name ("<UsedInIface>",
// "<ReflectMethod>") and tells whether it was flagged <ReflectMethod>.
func symbol(s string) (string, bool) {
	name, flags, _ := strings.Cut(s, " <")
	return name, strings.Contains("<"+flags, reflectMethodFlag)
}

// throughMethod finds the first step of a chain from a type descriptor to
// a function: a method the linker keeps for the type, because an interface
// it satisfies is used or because a <ReflectMethod> symbol is reachable.
func throughMethod(chain []string) (typ, method string, ok bool) {
	for i := 1; i < len(chain); i++ {
		if strings.HasPrefix(chain[i-1], "type:") && !strings.HasPrefix(chain[i], "type:") {
			return chain[i-1], chain[i], true
		}
	}
	return "", "", false
}

// chain returns the symbols from the root down to s.
func (g *graph) chain(s string) []string {
	var rev []string
	seen := map[string]bool{}
	for cur := s; cur != "_" && cur != "" && !seen[cur]; cur = g.parent[cur] {
		seen[cur] = true
		rev = append(rev, cur)
	}
	out := make([]string, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}
