//go:build e2e

package e2e

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const (
	// chromiumEnv names the browser the registry ui spec drives; by
	// default, Debian's chromium on $PATH (make e2e installs it).
	chromiumEnv = "SGCP_CHROMIUM"
	// artifactsEnv is where specs keep what a person looks at after a
	// run (screenshots); by default _output/e2e under the module.
	artifactsEnv = "SGCP_E2E_ARTIFACTS"
)

// The registry ui in a real browser: the page a person opens shows the pools
// with the figures of registry pools, a claim created through the API
// without a reload, who holds an address through a delegation, the records
// waiting and what for, and, to a user without rights, what role is missing.
// Each step's screenshot is kept in $SGCP_E2E_ARTIFACTS/registry-ui.
func TestRegistryUIInBrowser(t *testing.T) {
	c := sharedCluster(t)
	chromium := cmp.Or(os.Getenv(chromiumEnv), "chromium")
	if _, err := exec.LookPath(chromium); err != nil {
		t.Fatalf("the registry ui spec drives headless Chromium and found none (%v): install Debian's package, apt-get install chromium (make e2e does, as root), or set $%s to a Chromium or Chrome binary", err, chromiumEnv)
	}
	shots := screenshotDir(t, "registry-ui")
	kubeconfig := "--kubeconfig=" + c.Kubeconfig
	deleteLeftovers(t, c, "", "networkclaim/e2e-ui-org", "networkclaim/e2e-ui-cluster", "networkclaim/e2e-ui-node",
		"networkclaim/e2e-ui-late", "networkclaim/e2e-ui-new")
	deleteLeftovers(t, c, "default", "serviceaccount/e2e-ui-viewer", "clusterrolebinding/e2e-ui-viewer")
	claim := func(args ...string) {
		t.Helper()
		res := runBinary(t, append(append([]string{"registry", "claim"}, args...), kubeconfig)...)
		if res.ExitCode != 0 && !strings.Contains(res.Stderr, "unavailable") {
			t.Fatalf("registry claim %s: exit code %d; stderr:\n%s", strings.Join(args, " "), res.ExitCode, res.Stderr)
		}
	}
	// A pool, a tenant's pool taken from it, a node's range taken from
	// that, and a claim that waits for the first pool's space.
	claim("e2e-ui-org", "100.64.0.0/16", "--delegable", "--reference=pods", "--description=e2e organisation pods", "--reserve=100.64.255.0/24=gateways")
	claim("e2e-ui-cluster", "--from=e2e-ui-org", "--prefix-length=20", "--delegable")
	claim("e2e-ui-node", "--from=e2e-ui-cluster", "--prefix-length=24")
	claim("e2e-ui-late", "100.64.128.0/24")

	url := startRegistryUI(t, c.Kubeconfig)
	browser := newBrowser(t, chromium)

	// The pools, with registry pools' figures. The allocator writes a
	// pool's utilization about a second after it changes, so both are read
	// until they agree on a settled registry.
	do(t, browser, chromedp.Navigate(url))
	waitJS(t, browser, "the pools table", `document.querySelectorAll('#pools tbody tr').length > 0`)
	markLoad(t, browser)
	var cli, page string
	eventually(t, "the page's pools to show registry pools' figures", func(ctx context.Context) (bool, error) {
		res := runBinary(t, "registry", "pools", kubeconfig)
		cli = poolRows(res.Stdout, "e2e-ui-")
		page = evaluate(t, browser, chromedp.Evaluate[string](`[...document.querySelectorAll('#pools tbody tr')]
			.filter(tr => tr.dataset.pool.startsWith('e2e-ui-'))
			.map(tr => [...tr.cells].filter((_, i) => i !== 2).map(td => td.textContent.trim() || '<none>').join(' '))
			.join('\n')`))
		return res.ExitCode == 0 && cli != "" && page == cli && strings.Count(page, "\n") == 1 && !strings.Contains(page, " - "), nil
	})
	if !strings.Contains(page, "1 reserved") {
		t.Errorf("the pools table does not show e2e-ui-org's policy:\n%s", page)
	}
	bar := evaluate(t, browser, chromedp.Evaluate[string](`document.querySelector('#pools tr[data-pool^="e2e-ui-org "] .bar').getAttribute('aria-label')`))
	if !strings.Contains(bar, "allocated") || !strings.Contains(bar, "of 65536 addresses") {
		t.Errorf("e2e-ui-org's bar has the text alternative %q, want its figures in words", bar)
	}
	screenshot(t, browser, shots, "1-pools")

	// The tree opens with the keyboard: the pool, then its tenant and the
	// record that waits for it.
	do(t, browser, chromedp.Evaluate[chromedp.Void](`document.querySelector('#tree [data-key="e2e-ui-org 100.64.0.0/16"]').focus()`))
	do(t, browser, chromedp.KeyEvent(kb.ArrowRight))
	waitJS(t, browser, "the pool to open on ArrowRight", `document.querySelector('#tree [data-key="e2e-ui-org 100.64.0.0/16"]').getAttribute('aria-expanded') === 'true'`)
	do(t, browser, chromedp.KeyEvent(kb.ArrowRight))
	focused := evaluate(t, browser, chromedp.Evaluate[string](`document.activeElement.dataset.key || ''`))
	if focused != "e2e-ui-cluster 100.64.0.0/20" {
		t.Errorf("ArrowRight on an open pool moved the focus to %q, want its first child, e2e-ui-cluster 100.64.0.0/20", focused)
	}
	waiting := evaluate(t, browser, chromedp.Evaluate[string](`[...document.querySelectorAll('#tree [data-key^="waiting e2e-ui-late"]')].map(li => li.textContent).join('\n')`))
	if !strings.Contains(waiting, "Unavailable") || !strings.Contains(waiting, "e2e-ui-org") {
		t.Errorf("under e2e-ui-org's pool the tree shows waiting records %q, want e2e-ui-late, Unavailable, overlapping e2e-ui-org", waiting)
	}
	screenshot(t, browser, shots, "2-tree")

	// The waiting record leads to what it waits for: Enter on it in the
	// tree, and its link in the Waiting table.
	do(t, browser, chromedp.Evaluate[chromedp.Void](`document.querySelector('#tree [data-key^="waiting e2e-ui-late"]').focus()`), chromedp.KeyEvent(kb.Enter))
	waitJS(t, browser, "Enter on e2e-ui-late's record to focus e2e-ui-org's pool", `document.activeElement.dataset.key === 'e2e-ui-org 100.64.0.0/16'`)
	do(t, browser, chromedp.Evaluate[chromedp.Void](`document.querySelector('#tree [data-key^="waiting e2e-ui-late"]').focus()`))
	do(t, browser, chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('#waiting tbody tr')].find(tr => tr.textContent.includes('e2e-ui-late')).querySelector('td:last-child button').click()`))
	waitJS(t, browser, "the link to what e2e-ui-late waits for to focus e2e-ui-org's pool", `document.activeElement.dataset.key === 'e2e-ui-org 100.64.0.0/16'`)
	screenshot(t, browser, shots, "3-waits-for")

	// A claim created through the API shows without a reload, in the
	// tenant's pool, opened first with the keyboard.
	do(t, browser, chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight))
	waitJS(t, browser, "e2e-ui-cluster's pool to open", `document.querySelector('#tree [data-key="e2e-ui-cluster 100.64.0.0/20"]').getAttribute('aria-expanded') === 'true'`)
	start := time.Now()
	kubectlWithStdin(t, c, `apiVersion: networking.x-k8s.io/v1alpha1
kind: NetworkClaim
metadata:
  name: e2e-ui-new
spec:
  addressSpace:
  - name: node
    from: {claim: e2e-ui-cluster}
    prefixLength: 24
`, "apply", "-f", "-")
	waitJS(t, browser, "e2e-ui-new to show in e2e-ui-cluster's pool", `!!document.querySelector('#tree [data-key^="e2e-ui-new "]') && document.querySelector('#pools tr[data-pool^="e2e-ui-cluster "]').textContent.includes('e2e-ui-new')`)
	t.Logf("a claim created through the API showed on the open page %s after kubectl apply was started", time.Since(start).Round(time.Millisecond))
	checkNoReload(t, browser)
	screenshot(t, browser, shots, "4-live")

	// Who holds an address of the node: the chain goes up through both pools.
	do(t, browser, chromedp.Evaluate[chromedp.Void](`document.getElementById('whois-q').value = '100.64.0.1'; document.getElementById('whois-form').requestSubmit()`))
	waitJS(t, browser, "the whois table", `!!document.getElementById('whois-table')`)
	chain := evaluate(t, browser, chromedp.Evaluate[string](`[...document.querySelectorAll('#whois-table tbody tr')].map(tr => tr.cells[0].textContent + ' ' + tr.cells[4].textContent).join('\n')`))
	cliChain := runBinary(t, "registry", "whois", "100.64.0.1", kubeconfig)
	for _, want := range []string{"100.64.0.0/16 e2e-ui-org", "100.64.0.0/20 e2e-ui-cluster ← e2e-ui-org", "e2e-ui-node ← e2e-ui-cluster ← e2e-ui-org"} {
		if !strings.Contains(chain, want) {
			t.Errorf("whois 100.64.0.1 on the page:\n%s\nwant a row with %q; registry whois says:\n%s", chain, want, cliChain.Stdout)
		}
	}
	screenshot(t, browser, shots, "5-whois")

	// A user who may not list NetworkClaims is told so, and what grants
	// it; once granted, the page shows the registry on its own.
	kubectl(t, c, "create", "serviceaccount", "e2e-ui-viewer", "-n", "default")
	token := strings.TrimSpace(kubectl(t, c, "create", "token", "e2e-ui-viewer", "-n", "default"))
	viewerConfig := filepath.Join(t.TempDir(), "viewer.kubeconfig")
	kubectl(t, c, "config", "set-cluster", "e2e", "--kubeconfig="+viewerConfig, "--server="+c.URL, "--certificate-authority="+filepath.Join(c.DataDir, "pki", "ca.crt"))
	kubectl(t, c, "config", "set-credentials", "viewer", "--kubeconfig="+viewerConfig, "--token="+token)
	kubectl(t, c, "config", "set-context", "viewer", "--kubeconfig="+viewerConfig, "--cluster=e2e", "--user=viewer")
	kubectl(t, c, "config", "use-context", "viewer", "--kubeconfig="+viewerConfig)
	viewerURL := startRegistryUI(t, viewerConfig)
	do(t, browser, chromedp.Navigate(viewerURL))
	waitJS(t, browser, "the explanation of the missing rights", `!document.getElementById('problem').hidden && document.getElementById('problem-grant').textContent !== ''`)
	problem := evaluate(t, browser, chromedp.Evaluate[string](`document.getElementById('problem').innerText`))
	for _, want := range []string{"Not allowed to read the registry", "system:serviceaccount:default:e2e-ui-viewer", "list and watch", "view ClusterRole",
		"kubectl create clusterrolebinding e2e-ui-viewer-registry-view --clusterrole=view --serviceaccount=default:e2e-ui-viewer"} {
		if !strings.Contains(problem, want) {
			t.Errorf("the page for a user without rights says:\n%s\nwant it to say %q", problem, want)
		}
	}
	screenshot(t, browser, shots, "6-forbidden")
	markLoad(t, browser)
	kubectl(t, c, "create", "clusterrolebinding", "e2e-ui-viewer", "--clusterrole=view", "--serviceaccount=default:e2e-ui-viewer")
	waitJS(t, browser, "the registry once the role is granted", `document.getElementById('problem').hidden && !document.getElementById('registry').hidden && document.querySelectorAll('#pools tbody tr').length > 0`)
	checkNoReload(t, browser)
	screenshot(t, browser, shots, "7-granted")
}

// startRegistryUI runs registry ui on a free loopback port until the test
// ends, and returns the URL it printed.
func startRegistryUI(t *testing.T, kubeconfig string) string {
	t.Helper()
	bp, ok := provider.(*binaryProvider)
	if !ok {
		t.Fatalf("registry ui runs the binary; the provider is a %T", provider)
	}
	cmd := exec.Command(bp.binary, "registry", "ui", "--kubeconfig="+kubeconfig, "--address=127.0.0.1:0")
	killWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a buffer: exec's copying goroutine writes it while a
	// failing test reads it.
	stderrPath := filepath.Join(t.TempDir(), "registry-ui.stderr")
	stderrFile, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderrFile.Close() //nolint:errcheck // the child has its own
	cmd.Stderr = stderrFile
	stderr := func() string {
		data, _ := os.ReadFile(stderrPath)
		return string(data)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("registry ui did not stop cleanly on SIGINT: %v; stderr:\n%s", err, stderr())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("registry ui did not stop within 10s of SIGINT; stderr:\n%s", stderr())
		}
	})
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("registry ui printed nothing; stderr:\n%s", stderr())
	}
	first := lines.Text()
	_, url, ok := strings.Cut(first, " on http://")
	if !ok {
		t.Fatalf("registry ui printed %q, want the URL it serves on", first)
	}
	go func() {
		for lines.Scan() {
		}
	}()
	return "http://" + url
}

// newBrowser starts headless Chromium for the test.
func newBrowser(t *testing.T, chromium string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // the tests run as root in CI's containers
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("hide-scrollbars", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, on ctx itself: chromedp ties the browser's
	// life to the context of the first call, and a step's ends with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

// browserStepTimeout bounds one step in the browser.
const browserStepTimeout = 30 * time.Second

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("in the browser: %v", err)
	}
}

func evaluate[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("in the browser: %v", err)
	}
	return v
}

// waitJS waits until the expression is true in the page.
func waitJS(t *testing.T, ctx context.Context, what, expression string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserStepTimeout+time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingTimeout(browserStepTimeout), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting in the browser for %s: %v", what, err)
	}
}

// markLoad marks the loaded page, so that checkNoReload sees a reload.
func markLoad(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.e2eLoadMark = 'loaded once'`))
}

func checkNoReload(t *testing.T, ctx context.Context) {
	t.Helper()
	if mark := evaluate(t, ctx, chromedp.Evaluate[string](`window.e2eLoadMark || 'reloaded'`)); mark != "loaded once" {
		t.Errorf("the page was reloaded; it must follow the registry on its own")
	}
}

// poolRows are the rows of registry pools' table whose claim starts with
// prefix, their cells joined by one space.
func poolRows(table, prefix string) string {
	var rows []string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, prefix) {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(rows, "\n")
}

// screenshotDir is where a spec's screenshots go, emptied first.
func screenshotDir(t *testing.T, name string) string {
	t.Helper()
	root := os.Getenv(artifactsEnv)
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		root = filepath.Join(wd, "..", "..", "_output", "e2e")
	}
	dir := filepath.Join(root, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := evaluate(t, ctx, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(fmt.Errorf("keeping the screenshot: %w", err))
	}
}
