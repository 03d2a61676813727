// Command goproxy stands in for kube-apiserver's aggregator in tests/runtime/reverse_proxy_test.ts:
// an httputil.ReverseProxy in front of the adapter's HTTPS server, on ONE kept-alive HTTP/1.1
// upstream connection, presenting a front-proxy client certificate and X-Remote-* headers.
//
// It prints "listening 127.0.0.1:PORT" once it accepts requests. GET /__proxy/conns answers
// {"dials":N}, the upstream connections it opened so far. A request carrying
// X-Upstream-Close: 1 is forwarded with Connection: close, so the upstream closes after it.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	upstream := flag.String("upstream", "", "the adapter's base URL, e.g. https://127.0.0.1:8443")
	caFile := flag.String("ca", "", "PEM bundle that verifies the upstream's serving certificate")
	certFile := flag.String("cert", "", "PEM client certificate presented to the upstream")
	keyFile := flag.String("key", "", "PEM key of -cert")
	user := flag.String("user", "system:admin", "X-Remote-User sent upstream")
	groups := flag.String("groups", "system:masters", "comma-separated X-Remote-Group values sent upstream")
	flag.Parse()
	if err := run(*upstream, *caFile, *certFile, *keyFile, *user, *groups); err != nil {
		fmt.Fprintf(os.Stderr, "goproxy: %v\n", err)
		os.Exit(1)
	}
}

func run(upstream, caFile, certFile, keyFile, user, groups string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Scheme != "https" || target.Host == "" {
		return fmt.Errorf("invalid -upstream %q: want https://HOST:PORT", upstream)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("cannot read -ca: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in -ca %q", caFile)
	}
	clientCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("cannot load -cert and -key: %w", err)
	}

	var dials atomic.Int64
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{clientCert},
			MinVersion:   tls.VersionTLS12,
		},
		// one connection that every request shares, in turn, as the aggregator's would under load
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     90 * time.Second,
		// a non-nil empty map keeps the transport on HTTP/1.1 even when the server offers h2
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	groupList := strings.Split(groups, ",")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			// the aggregator replaces whatever identity headers the client sent
			r.Out.Header.Del("X-Remote-User")
			r.Out.Header.Del("X-Remote-Group")
			r.Out.Header.Set("X-Remote-User", user)
			for _, g := range groupList {
				r.Out.Header.Add("X-Remote-Group", g)
			}
			if r.In.Header.Get("X-Upstream-Close") == "1" {
				r.Out.Header.Del("X-Upstream-Close")
				r.Out.Close = true
			}
		},
		Transport: transport,
		ErrorLog:  log.New(os.Stderr, "goproxy: ", 0),
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/__proxy/conns", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"dials": dials.Load()})
	})
	mux.Handle("/", proxy)

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	fmt.Printf("listening %s\n", listener.Addr())
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return server.Serve(listener)
}
