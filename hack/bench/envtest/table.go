package main

import (
	"fmt"

	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

// The columns: ours first, then envtest, then ours ÷ envtest.
const (
	inProcessColumn = 0
	launcherColumn  = 1
	envtestColumn   = 2
)

// printTable prints the figures side by side and the goals.
func printTable(cs []contender, runs, tests, servers int) {
	fmt.Printf("\nenvtest beside ours, median of %d runs (min-max)\n\n", runs)
	fmt.Printf("%-34s %22s %22s %22s %9s %9s\n", "figure", cs[inProcessColumn].name, cs[launcherColumn].name, cs[envtestColumn].name, "in-proc÷", "launch÷")
	rows := []struct {
		name   string
		pick   func(c *contender) []float64
		format func(float64) string
	}{
		{"start to ready (s)", func(c *contender) []float64 { return c.sequence.start }, seconds},
		{"install 10 CRDs (s)", func(c *contender) []float64 { return c.sequence.crds }, seconds},
		{fmt.Sprintf("suite of %d reconciler tests (s)", tests), func(c *contender) []float64 { return c.sequence.suite }, seconds},
		{"  waiting for namespaces to go (s)", func(c *contender) []float64 { return c.sequence.namespaceWait }, seconds},
		{"  the rest: as envtest runs it (s)", func(c *contender) []float64 { return c.sequence.suiteNoWait }, seconds},
		{"stop (s)", func(c *contender) []float64 { return c.sequence.stop }, seconds},
		{"peak RSS, all processes (MiB)", func(c *contender) []float64 { return c.sequence.peakRSS }, megabytes},
		{fmt.Sprintf("%d at once, all ready (s)", servers), func(c *contender) []float64 { return c.parallel.allReady }, seconds},
		{fmt.Sprintf("%d at once, stop (s)", servers), func(c *contender) []float64 { return c.parallel.stop }, seconds},
		{fmt.Sprintf("%d at once, peak RSS (MiB)", servers), func(c *contender) []float64 { return c.parallel.peakRSS }, megabytes},
	}
	for _, row := range rows {
		envtest := row.pick(&cs[envtestColumn])
		fmt.Printf("%-34s", row.name)
		for i := range cs {
			fmt.Printf(" %22s", cell(&cs[i], row.pick(&cs[i]), row.format))
		}
		for _, i := range []int{inProcessColumn, launcherColumn} {
			fmt.Printf(" %9s", ratio(&cs[i], row.pick(&cs[i]), envtest))
		}
		fmt.Println()
	}

	fmt.Printf("\n%-44s %16s %16s\n", "goal (issue 28)", cs[inProcessColumn].name, cs[launcherColumn].name)
	goals := []struct {
		name  string
		value func(c *contender) float64
		met   func(v float64) bool
		unit  string
		// ofEnvtest: the goal is a ratio to envtest's figure.
		ofEnvtest bool
	}{
		{"start to ready ≤ 0.2× envtest's", func(c *contender) float64 {
			return benchutil.Median(c.sequence.start) / benchutil.Median(cs[envtestColumn].sequence.start)
		}, func(v float64) bool { return v <= 0.2 }, "×", true},
		{"suite ≤ 0.3× envtest's", func(c *contender) float64 {
			return benchutil.Median(c.sequence.suite) / benchutil.Median(cs[envtestColumn].sequence.suite)
		}, func(v float64) bool { return v <= 0.3 }, "×", true},
		{"  without waiting for namespaces to go", func(c *contender) float64 {
			return benchutil.Median(c.sequence.suiteNoWait) / benchutil.Median(cs[envtestColumn].sequence.suite)
		}, func(v float64) bool { return v <= 0.3 }, "×", true},
		{fmt.Sprintf("%d at once, all ready ≤ 5 s", servers), func(c *contender) float64 {
			return benchutil.Median(c.parallel.allReady)
		}, func(v float64) bool { return v <= 5 }, " s", false},
	}
	for _, g := range goals {
		fmt.Printf("%-44s", g.name)
		for _, i := range []int{inProcessColumn, launcherColumn} {
			c := &cs[i]
			if c.missing != "" || (g.ofEnvtest && cs[envtestColumn].missing != "") {
				fmt.Printf(" %16s", "(missing)")
				continue
			}
			v := g.value(c)
			verdict := "missed"
			if g.met(v) {
				verdict = "met"
			}
			fmt.Printf(" %16s", fmt.Sprintf("%.2f%s %s", v, g.unit, verdict))
		}
		fmt.Println()
	}
	for _, c := range cs {
		if c.missing != "" {
			fmt.Printf("\n%s not measured: %s\n", c.name, c.missing)
		}
	}
}

// cell is the median (min-max) of a contender's figure.
func cell(c *contender, v []float64, format func(float64) string) string {
	if c.missing != "" {
		return "(missing)"
	}
	return benchutil.Cell(v, format)
}

// ratio is the median of ours over envtest's.
func ratio(c *contender, ours, envtest []float64) string {
	if c.missing != "" || len(ours) == 0 || len(envtest) == 0 || benchutil.Median(envtest) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", benchutil.Median(ours)/benchutil.Median(envtest))
}

func seconds(v float64) string   { return fmt.Sprintf("%.2f", v) }
func megabytes(v float64) string { return fmt.Sprintf("%.0f", v) }
