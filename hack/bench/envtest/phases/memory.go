package phases

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// descendantsPeakKiB sums the peak RSS (VmHWM) of this process's
// descendants, found by their parent pids in /proc. Rusage cannot tell:
// the ru_maxrss of a child that has been waited for is the largest of its
// own and its waited-for descendants' peaks, not their sum, and envtest's
// etcd and kube-apiserver are two processes whose memory adds up.
func descendantsPeakKiB() int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentPid(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var total int64
	for queue := children[os.Getpid()]; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		total += peakKiB(pid)
		queue = append(queue, children[pid]...)
	}
	return total
}

// parentPid reads the fourth field of /proc/PID/stat. The command name,
// the second, may hold spaces; fields count from its closing parenthesis.
func parentPid(pid int) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// peakKiB reads VmHWM, the peak resident set, from /proc/PID/status.
func peakKiB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
