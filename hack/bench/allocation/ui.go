package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	clientv1alpha1 "sigs.k8s.io/sample-generic-controlplane/client/clientset/versioned/typed/networking/v1alpha1"
)

// uiSamples is how many page loads and live changes are measured.
const uiSamples = 5

// goalFirstView is how soon registry ui's first view is on screen.
const goalFirstView = time.Second

// uiFigures are registry ui's, on the filled registry.
type uiFigures struct {
	// skipped says why they were not measured (no browser).
	skipped string
	// ready is from the exec of registry ui to its first view of the
	// registry (it lists and indexes every claim), asked over HTTP.
	ready time.Duration
	// firstView is, per page load, from the navigation's start to the
	// pools and the tree on screen, as the browser's clock says.
	firstView []time.Duration
	// live is, per claim created, from the create to the open page
	// counting it, without a reload.
	live []time.Duration
}

// measureUI runs the binary's registry ui against the control plane and
// measures it in headless Chromium ($SGCP_CHROMIUM, else chromium on $PATH).
func measureUI(ctx context.Context, o options, kubeconfig string, claims clientv1alpha1.NetworkClaimInterface) (uiFigures, error) {
	var f uiFigures
	chromium := os.Getenv("SGCP_CHROMIUM")
	if chromium == "" {
		chromium = "chromium"
	}
	if _, err := exec.LookPath(chromium); err != nil {
		f.skipped = fmt.Sprintf("no browser: %v; apt-get install chromium, or set SGCP_CHROMIUM", err)
		return f, nil
	}
	fmt.Fprintln(os.Stderr, "measuring registry ui")
	uiCtx, stopUI := context.WithCancel(ctx)
	defer stopUI()
	start := time.Now()
	cmd := exec.CommandContext(uiCtx, o.binary, "registry", "ui", "--kubeconfig="+kubeconfig, "--address=127.0.0.1:0")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return f, err
	}
	if err := cmd.Start(); err != nil {
		return f, fmt.Errorf("registry ui: %w", err)
	}
	defer func() {
		stopUI()
		_ = cmd.Wait() // interrupted
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		return f, errors.New("registry ui printed nothing")
	}
	_, url, ok := strings.Cut(lines.Text(), " on http://")
	if !ok {
		return f, fmt.Errorf("registry ui printed %q, not its URL", lines.Text())
	}
	url = "http://" + url
	go func() {
		for lines.Scan() {
		}
	}()

	// Ready: the server has read the registry. Asked over HTTP before the
	// browser starts, so that the browser's start is not part of it.
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var ov struct{ State string }
		resp, err := http.Get(url + "api/overview")
		if err != nil {
			return false, nil // not listening yet
		}
		defer resp.Body.Close() //nolint:errcheck
		if err := json.NewDecoder(resp.Body).Decode(&ov); err != nil {
			return false, err
		}
		return ov.State == "Ready", nil
	})
	if err != nil {
		return f, fmt.Errorf("registry ui's first view of the registry: %w", err)
	}
	f.ready = time.Since(start)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		return f, fmt.Errorf("starting %s: %w", chromium, err)
	}

	const onScreen = `document.querySelectorAll('#pools tbody tr').length > 0 && document.querySelectorAll('#tree [role="treeitem"]').length > 0 ? performance.now() : 0`
	for range uiSamples {
		if err := chromedp.Do(browser, chromedp.Navigate(url)); err != nil {
			return f, err
		}
		ms, err := chromedp.Run(browser, chromedp.Poll[float64](onScreen, chromedp.WithPollingTimeout(time.Minute)))
		if err != nil {
			return f, fmt.Errorf("the page's first view: %w", err)
		}
		f.firstView = append(f.firstView, time.Duration(ms*float64(time.Millisecond)))
	}

	for i := range uiSamples {
		counted, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.getElementById('where').textContent`))
		if err != nil {
			return f, err
		}
		var n int
		if _, err := fmt.Sscanf(counted[strings.Index(counted, "· ")+len("· "):], "%d claims", &n); err != nil {
			return f, fmt.Errorf("the page's header %q: %w", counted, err)
		}
		start := time.Now()
		if _, err := claims.Create(ctx, claim(fmt.Sprintf("ui-live-%d", i), fmt.Sprintf("192.0.2.%d/32", i)), metav1.CreateOptions{}); err != nil {
			return f, err
		}
		if _, err := chromedp.Run(browser, chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById('where').textContent.includes('· %d claims')`, n+1),
			chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
			return f, fmt.Errorf("claim ui-live-%d on the open page: %w", i, err)
		}
		f.live = append(f.live, time.Since(start))
	}
	return f, nil
}

// reportUI prints registry ui's figures.
func reportUI(f uiFigures, claims int) {
	fmt.Printf("\nregistry ui with %d claims, in headless Chromium\n\n", claims)
	if f.skipped != "" {
		fmt.Printf("  not measured: %s\n", f.skipped)
		return
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	met := "met"
	if median(f.firstView) > goalFirstView {
		met = "missed"
	}
	fmt.Printf("%-58s %9s\n", "registry ui exec to its view of the registry built", ms(f.ready))
	fmt.Printf("%-58s %9s  (median of %d; goal %s: %s)\n", "page load to the pools and the tree on screen", ms(median(f.firstView)), len(f.firstView), ms(goalFirstView), met)
	fmt.Printf("%-58s %9s  (median of %d; goal 1000 ms)\n", "claim created to the open page counting it, no reload", ms(median(f.live)), len(f.live))
}
