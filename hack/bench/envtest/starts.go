package main

import (
	"fmt"
	"os"
	"slices"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// skipOthers marks every contender not named in names as not measured.
func skipOthers(cs []contender, names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(cs, func(c contender) bool { return c.name == n }) {
			return fmt.Errorf("-contenders: no contender %q; want in-process, launcher or envtest", n)
		}
	}
	for i := range cs {
		if cs[i].missing == "" && !slices.Contains(names, cs[i].name) {
			cs[i].missing = "not among -contenders"
		}
	}
	return nil
}

// measureStarts is -starts-only: per run and contender, in turns, a child
// that starts one server to ready (a first namespace created) and stops
// it, then (unless servers is 1) one that starts servers of them at once. Each child's CPU time
// is from its exec to its exit: the process's initialisation, the start,
// and the stop; for the launcher and envtest their servers' processes too.
func measureStarts(cs []contender, runs, servers int) {
	loadBefore := loadAverage()
	one := []string{"-start-only", "-servers=1"}
	many := []string{"-start-only", "-servers=" + fmt.Sprint(servers)}
	for run := range runs {
		for i := range cs {
			c := &cs[i]
			if c.missing != "" {
				continue
			}
			fmt.Fprintf(os.Stderr, "run %d/%d: %s, one start (load %s)\n", run+1, runs, c.name, loadAverage())
			if err := c.measure(one, &c.starts); err != nil {
				benchutil.Fail(err)
			}
			if servers < 2 {
				continue
			}
			fmt.Fprintf(os.Stderr, "run %d/%d: %s, %d at once (load %s)\n", run+1, runs, c.name, servers, loadAverage())
			if err := c.measure(many, &c.startsParallel); err != nil {
				benchutil.Fail(err)
			}
		}
	}
	loadAfter := loadAverage()
	fmt.Printf("\nstarts, median of %d runs (min-max)\n\n", runs)
	fmt.Printf("%-28s", "figure")
	for _, c := range cs {
		if c.missing == "" {
			fmt.Printf(" %22s", c.name)
		}
	}
	fmt.Println()
	rows := []struct {
		name string
		pick func(c *contender) []float64
	}{
		{"start to ready (s)", func(c *contender) []float64 { return c.starts.allReady }},
		{"CPU, whole child (s)", func(c *contender) []float64 { return c.starts.cpu }},
		{fmt.Sprintf("%d at once, all ready (s)", servers), func(c *contender) []float64 { return c.startsParallel.allReady }},
		{fmt.Sprintf("%d at once, CPU (s)", servers), func(c *contender) []float64 { return c.startsParallel.cpu }},
	}
	if servers < 2 {
		rows = rows[:2]
	}
	for _, row := range rows {
		fmt.Printf("%-28s", row.name)
		for i := range cs {
			if cs[i].missing == "" {
				fmt.Printf(" %22s", benchutil.Cell(row.pick(&cs[i]), seconds))
			}
		}
		fmt.Println()
	}
	fmt.Printf("\nload average (1, 5, 15 min) before: %s; after: %s\n", loadBefore, loadAfter)
	fmt.Printf("CPU is user and system time from each child's exec to its exit, its server processes included: one server's start and stop, or %d of them\n", servers)
}
