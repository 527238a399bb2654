package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
)

// startProfiling serves Go's profiles (net/http/pprof) on JEAN2_DEBUG_ADDR when it is set,
// so a soak (bench/soak) or a person chasing memory can read the server's heap and
// goroutines, or a benchmark (bench/mcp) the CPU profile of `jean2 mcp` under its calls. The address must be a loopback one: the profiles carry no token check. It
// returns the function that stops the listener.
func startProfiling(e env, who string) (stop func(), err error) {
	addr := strings.TrimSpace(e.getenv("JEAN2_DEBUG_ADDR"))
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usagef("JEAN2_DEBUG_ADDR %q: give a loopback address and port, such as 127.0.0.1:6060: %v", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, usagef("JEAN2_DEBUG_ADDR %q: the profiles carry no token check, so they are served on a loopback address only (127.0.0.1 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("JEAN2_DEBUG_ADDR: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	fmt.Fprintf(e.stderr, "%s: profiling on http://%s/debug/pprof/ (JEAN2_DEBUG_ADDR)\n", who, ln.Addr())
	return func() { _ = hs.Close() }, nil
}
