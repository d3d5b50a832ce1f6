package controlplane

import (
	"net"
	"sync"
)

// Listener is the bound secure port (CompletedOptions.Listen).
type Listener struct {
	serving *servingListener
}

// Close frees the port, whether or not the server ran. It is safe to call
// more than once.
func (l *Listener) Close() { l.serving.release() }

// servingListener is the API server's listener. Its release frees the port
// even when the HTTP server has not stopped, i.e. when its stop was left
// behind: upstream panics when Serve returns before it was told to stop,
// so Accept then does not return until the HTTP server closes the listener
// itself, as it does once it stops.
type servingListener struct {
	net.Listener
	releaseOnce, closeOnce sync.Once
	// released is closed when the port is freed, closed when the HTTP
	// server closes the listener.
	released, closed chan struct{}
}

func newServingListener(l net.Listener) *servingListener {
	return &servingListener{Listener: l, released: make(chan struct{}), closed: make(chan struct{})}
}

func (l *servingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		select {
		case <-l.released:
			<-l.closed
		default:
		}
	}
	return conn, err
}

// Close is the HTTP server's.
func (l *servingListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// release frees the port; the HTTP server may not have stopped.
func (l *servingListener) release() {
	l.releaseOnce.Do(func() { close(l.released) })
	l.Listener.Close() //nolint:errcheck // closed already once the HTTP server stopped
}
