package logging

import (
	"sync"
	_ "unsafe" // go:linkname

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	_ "k8s.io/apiserver/pkg/storage/storagebackend/factory" // defines etcd3ClientLogger

	"sigs.k8s.io/sample-generic-controlplane/embedded-etcd/zaprepeats"
)

// etcd3ClientLogger is k8s.io/apiserver's logger of every etcd client it
// creates (newETCD3Client gives it as clientv3.Config.Logger). Upstream
// builds it in its package's init, writing JSON to stderr at the info
// level, and offers no way to pass another: storagebackend.Config has no
// logger, and ETCD_CLIENT_DEBUG cannot lower the level (etcdClientDebugLevel
// returns "info" for every valid level; its check of l.Set's error is
// inverted). While etcd has no quorum, the client's retry interceptor warns
// "retrying of unary invoker failed" for every failed request: hundreds of
// lines a minute, past every filter of ours.
//
// So the variable is pulled here by name and its logger wrapped before any
// storage is built. The linker (Go 1.23's -checklinkname) refuses pulls of
// the standard library's unmarked symbols only; this one is a module's.
// Should upstream rename it, drop it or change its type, the linker would
// not notice (a pulled variable it cannot find becomes a new one of ours):
// etcdclient_test.go does, from upstream's source and at run time.
//
// Drop this file once k8s.io/apiserver takes a logger from its caller
// (a zap logger in storagebackend.Config or its TransportConfig, or one
// built on klog); fixing the inverted check alone would not do, as it only
// lets the environment lower the level, which loses the first warnings too.
//
//go:linkname etcd3ClientLogger k8s.io/apiserver/pkg/storage/storagebackend/factory.etcd3ClientLogger
var etcd3ClientLogger *zap.Logger

var holdEtcdClientRepeats sync.Once

// HoldEtcdClientRepeats makes the etcd clients the API server's storage
// creates from now on hold back the messages they repeat, as the embedded
// etcd member's logger does (zaprepeats): each message at most once per
// zaprepeats.Interval, the next one written saying how many were held back.
// Their lines stay as upstream writes them otherwise. ValidateAndApply
// calls it; a program that configures logging itself calls it before it
// builds any storage. Calls after the first do nothing.
func HoldEtcdClientRepeats() {
	holdEtcdClientRepeats.Do(func() {
		if etcd3ClientLogger == nil {
			// Not upstream's variable, or not set by its init: the tests
			// fail; a program goes on with etcd's own default logger.
			return
		}
		etcd3ClientLogger = etcd3ClientLogger.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core {
			return zaprepeats.NewCore(core, zaprepeats.Interval)
		}))
	})
}
