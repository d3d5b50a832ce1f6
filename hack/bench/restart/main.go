// Command restart measures how long sample-generic-controlplane takes to
// serve again after SIGKILL while clients write to it, cycle after cycle,
// and how that time grows as the data does: a server of a cluster of
// three joined with tokens on 127.0.0.1, .2 and .3 (the one the clients
// write to), and a single server beside it. Each cycle waits for -acks
// acknowledged creates, kills the server, starts it again at once and
// times its exec to its first 200 on /readyz.
//
//	go run ./hack/bench/restart -binary bin/sample-generic-controlplane
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	etcdcluster "sigs.k8s.io/sample-generic-controlplane/embedded-etcd/cluster"
	"sigs.k8s.io/sample-generic-controlplane/hack/bench/internal/benchutil"
)

func main() {
	binary := flag.String("binary", "bin/sample-generic-controlplane", "sample-generic-controlplane binary")
	cycles := flag.Int("cycles", 10, "kills and restarts per topology")
	writers := flag.Int("writers", 32, "clients creating ConfigMaps")
	acks := flag.Int64("acks", 200, "acknowledged creates between two kills")
	flag.Parse()
	// The writers' clients log every connection the kills reset.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	dir, err := os.MkdirTemp("", "sgcp-bench-restart-")
	if err != nil {
		benchutil.Fail(err)
	}
	defer os.RemoveAll(dir) //nolint:errcheck

	fmt.Printf("\nrestart under load: SIGKILL while %d clients write, start again at once; %d cycles, %d acknowledged creates between kills\n", *writers, *cycles, *acks)
	for _, joined := range []bool{false, true} {
		c := &cluster{binary: *binary, dir: filepath.Join(dir, map[bool]string{false: "single", true: "joined"}[joined])}
		cs, err := c.measure(joined, *cycles, *writers, *acks)
		c.stop()
		if err != nil {
			os.RemoveAll(dir) //nolint:errcheck // Fail exits: no deferred call runs
			benchutil.Fail(err)
		}
		report(c.name(joined), cs)
	}
}

// server is one process of the cluster, restartable on its data dir.
type server struct {
	ip      string
	port    int
	dataDir string
	args    []string
	p       *benchutil.Process
	starts  int
}

func (s *server) start(binary string, once ...string) (time.Duration, error) {
	s.starts++
	exec := time.Now()
	args := append(append([]string{}, s.args...), once...)
	var err error
	if s.p, err = benchutil.Start(binary, args, fmt.Sprintf("%s-%d.log", s.dataDir, s.starts)); err != nil {
		return 0, err
	}
	if err := benchutil.WaitReadyOn(s.ip, s.port, s.p, 2*time.Minute); err != nil {
		return 0, err
	}
	return time.Since(exec), nil
}

// ownFigure is the time to ready the binary printed at its last start,
// from its own start; it prints it a moment after /readyz says ok.
func (s *server) ownFigure() float64 {
	for range 100 {
		data, _ := os.ReadFile(s.p.Log)
		if m := readyLine.FindSubmatch(data); m != nil {
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

var readyLine = regexp.MustCompile(`is ready \(([\d.]+)s\)`)

type cluster struct {
	binary  string
	dir     string
	servers []*server
}

func (c *cluster) name(joined bool) string {
	if joined {
		return "joined (3 servers), the written-to server killed"
	}
	return "single server"
}

func (c *cluster) newServer(i int, extra ...string) (*server, error) {
	ip := "127.0.0." + strconv.Itoa(i+1)
	port, err := benchutil.FreePortOn(ip)
	if err != nil {
		return nil, err
	}
	s := &server{ip: ip, port: port, dataDir: filepath.Join(c.dir, "server-"+strconv.Itoa(i))}
	s.args = append([]string{"--data-dir=" + s.dataDir, "--bind-address=" + ip, "--secure-port=" + strconv.Itoa(port)}, extra...)
	c.servers = append(c.servers, s)
	return s, os.MkdirAll(c.dir, 0o700)
}

// start starts the first server, and two more joined to it with tokens.
func (c *cluster) start(joined bool) error {
	var init []string
	if joined {
		init = []string{"--cluster-init"}
	}
	first, err := c.newServer(0, c.peerPort(0)...)
	if err != nil {
		return err
	}
	if _, err := first.start(c.binary, init...); err != nil {
		return err
	}
	if !joined {
		return nil
	}
	for i := 1; i < 3; i++ {
		token, err := exec.Command(c.binary, "token", "create", "--single-use", "--ttl=10m", "--kubeconfig="+first.kubeconfig()).Output()
		if err != nil {
			return fmt.Errorf("token create: %w", err)
		}
		tokenFile := filepath.Join(c.dir, "token-"+strconv.Itoa(i))
		if err := os.WriteFile(tokenFile, []byte(strings.TrimSpace(string(token))), 0o600); err != nil {
			return err
		}
		s, err := c.newServer(i, c.peerPort(i)...)
		if err != nil {
			return err
		}
		if _, err := s.start(c.binary, "--join=https://"+first.ip+":"+strconv.Itoa(first.port), "--token-file="+tokenFile); err != nil {
			return err
		}
	}
	return nil
}

func (c *cluster) peerPort(i int) []string {
	port, err := benchutil.FreePortOn("127.0.0." + strconv.Itoa(i+1))
	if err != nil {
		benchutil.Fail(err)
	}
	return []string{"--etcd-peer-port=" + strconv.Itoa(port)}
}

func (s *server) kubeconfig() string { return filepath.Join(s.dataDir, "admin.kubeconfig") }

func (c *cluster) stop() {
	for _, s := range c.servers {
		if s.p != nil {
			s.p.Stop() //nolint:errcheck // best effort at the end
		}
	}
}

// cycle is what one kill and restart measured.
type cycle struct {
	ready, own, cpu float64 // seconds
	stored          int64   // creates acknowledged so far
	// led: the killed server's member led the etcd cluster, whose other
	// members then elect a leader (etcd's 1 s election timeout) before
	// the restarted one serves.
	led bool
}

// leads tells whether s's etcd member leads its cluster, as the binary's
// cluster members reports it.
func (c *cluster) leads(s *server) (bool, error) {
	out, err := exec.Command(c.binary, "cluster", "members", "-o", "json", "--kubeconfig="+s.kubeconfig()).Output()
	if err != nil {
		return false, fmt.Errorf("cluster members: %w", err)
	}
	var members []etcdcluster.MemberStatus
	if err := json.Unmarshal(out, &members); err != nil {
		return false, err
	}
	for _, m := range members {
		for _, u := range m.PeerURLs {
			if m.Leader && strings.Contains(u, "//"+s.ip+":") {
				return true, nil
			}
		}
	}
	return false, nil
}

func (c *cluster) measure(joined bool, cycles, writers int, acks int64) ([]cycle, error) {
	if err := c.start(joined); err != nil {
		return nil, err
	}
	target := c.servers[0]
	cfg, err := clientcmd.BuildConfigFromFlags("", target.kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 5*time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restart"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; {
				_, err := cs.CoreV1().ConfigMaps("restart").Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%02d-%06d", w, seq)},
					Data:       map[string]string{"seq": strconv.Itoa(seq)}}, metav1.CreateOptions{})
				switch {
				case err == nil:
					acked.Add(1)
					seq++
				case apierrors.IsAlreadyExists(err):
					seq++
				default:
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	defer wg.Wait()
	defer cancel()

	var out []cycle
	for i := range cycles {
		want := acked.Load() + acks
		deadline := time.Now().Add(2 * time.Minute)
		for acked.Load() < want {
			if time.Now().After(deadline) {
				return out, fmt.Errorf("cycle %d: %d acknowledged creates in 2 minutes, want %d", i+1, acked.Load(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		led := false
		if joined {
			if led, err = c.leads(target); err != nil {
				return out, fmt.Errorf("cycle %d: %w", i+1, err)
			}
		}
		target.p.Kill()
		ready, err := target.start(c.binary)
		if err != nil {
			return out, fmt.Errorf("cycle %d: %w", i+1, err)
		}
		cpu := benchutil.CPUSeconds([]int{target.p.Cmd.Process.Pid})
		out = append(out, cycle{ready: ready.Seconds(), own: target.ownFigure(), cpu: cpu, stored: acked.Load(), led: led})
		fmt.Fprintf(os.Stderr, "%s: cycle %d: ready %.2f s\n", c.name(joined), i+1, ready.Seconds())
	}
	return out, nil
}

func report(name string, cs []cycle) {
	fmt.Printf("\n%s\n%-6s %10s %14s %16s %20s %6s\n", name, "cycle", "ready (s)", "own figure (s)", "CPU to ready (s)", "creates acknowledged", "led")
	var ready, cpu, followed []float64
	for i, c := range cs {
		ready, cpu = append(ready, c.ready), append(cpu, c.cpu)
		if !c.led {
			followed = append(followed, c.ready)
		}
		fmt.Printf("%-6d %10.2f %14.2f %16.2f %20d %6s\n", i+1, c.ready, c.own, c.cpu, c.stored, map[bool]string{true: "yes", false: "-"}[c.led])
	}
	if len(ready) == 0 {
		return
	}
	fmt.Printf("ready: median %s s, first %.2f s, last %.2f s, growth %+.3f s per cycle (least squares)\n",
		benchutil.Cell(ready, benchutil.Seconds), ready[0], ready[len(ready)-1], slope(ready))
	if len(followed) > 0 && len(followed) < len(ready) {
		fmt.Printf("ready when the killed server did not lead: median %s s\n", benchutil.Cell(followed, benchutil.Seconds))
	}
	fmt.Printf("CPU to ready: first %.2f s, last %.2f s, growth %+.3f s per cycle\n", cpu[0], cpu[len(cpu)-1], slope(cpu))
}

// slope is the least-squares slope of v over its index.
func slope(v []float64) float64 {
	n := float64(len(v))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, y := range v {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
