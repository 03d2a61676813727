// Command loadgen is the benchmark's HTTPS load generator for what wrk cannot do: it presents
// a client certificate, as the kube-apiserver's aggregator does when it proxies a metrics read
// to the adapter. Standard library only.
//
//	loadgen pki DIR
//	    writes DIR/ca.crt, DIR/client.crt and DIR/client.key: a CA and a client certificate
//	    (CN front-proxy-client) it signed, ECDSA P-256, valid for a day.
//	loadgen run -url URL [-c 8] [-d 2s] [-delay 0] [-cert F -key F] [-H "Name: value"]...
//	    [-paths FILE [-rate R]]
//	    keeps -c connections busy for -d (each waits -delay before each request, a paced
//	    load) and prints one line "BENCHJSON {...}" with the fields bench/wrk_report.lua
//	    prints for wrk (requests, durationUs, bytes, err*, meanUs, p50Us, p90Us, p99Us,
//	    maxUs). The server certificate is not verified (wrk does not verify it either).
//	    With -paths, the connections read the file's request URIs (one a line, e.g.
//	    "/apis/...?labelSelector=...") in turn, from the first to the last and again, on the
//	    host of -url; with -rate, R requests a second between all connections (a request
//	    waits for its turn; a slow server is not given more than R a second), so that every
//	    path is read once per lines/R seconds. The JSON then also has "passes" (how many
//	    times the whole list was read) and "statuses" (answers by status code).
//
// Each connection writes one HTTP/1.1 request and reads the whole answer before the next
// (Content-Length or chunked bodies); a latency is the time from writing the request to the
// last byte of the answer.
package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: loadgen pki DIR | loadgen run -url URL [options]")
	}
	switch os.Args[1] {
	case "pki":
		if len(os.Args) != 3 {
			fail("usage: loadgen pki DIR")
		}
		if err := writePKI(os.Args[2]); err != nil {
			fail(err.Error())
		}
	case "run":
		run(os.Args[2:])
	default:
		fail(fmt.Sprintf("unknown command %q (pki, run)", os.Args[1]))
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "loadgen:", msg)
	os.Exit(2)
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

type result struct {
	latencies                                []uint32 // microseconds
	bytes                                    int64
	errConnect, errRead, errWrite, errStatus int
	statuses                                 map[int]int
}

func run(args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	target := fs.String("url", "", "https URL to read")
	conns := fs.Int("c", 8, "connections")
	duration := fs.Duration("d", 2*time.Second, "how long")
	delay := fs.Duration("delay", 0, "wait before each request, per connection")
	certFile := fs.String("cert", "", "client certificate (PEM)")
	keyFile := fs.String("key", "", "client key (PEM)")
	pathsFile := fs.String("paths", "", "file of request URIs to read in turn (one a line)")
	rate := fs.Float64("rate", 0, "with -paths: requests a second between all connections (0: no limit)")
	var extra headers
	fs.Var(&extra, "H", "request header \"Name: value\" (repeatable)")
	_ = fs.Parse(args)
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		fail(fmt.Sprintf("-url must be an https URL, got %q", *target))
	}
	cfg := &tls.Config{InsecureSkipVerify: true, ClientSessionCache: tls.NewLRUClientSessionCache(64)}
	if *certFile != "" {
		pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fail(err.Error())
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	request := func(uri string) []byte {
		var req bytes.Buffer
		fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n", uri, u.Host)
		for _, h := range extra {
			fmt.Fprintf(&req, "%s\r\n", h)
		}
		req.WriteString("\r\n")
		return req.Bytes()
	}
	var requests [][]byte
	if *pathsFile != "" {
		text, err := os.ReadFile(*pathsFile)
		if err != nil {
			fail(err.Error())
		}
		for _, line := range strings.Split(string(text), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				requests = append(requests, request(line))
			}
		}
		if len(requests) == 0 {
			fail(fmt.Sprintf("no request URIs in %s", *pathsFile))
		}
	} else {
		requests = [][]byte{request(u.RequestURI())}
	}

	start := time.Now()
	end := start.Add(*duration)
	// one URI and no rate (the tls section): every connection writes it as fast as it can,
	// with no hand-over between goroutines
	var turns chan int
	var passes atomic.Int64
	if len(requests) > 1 || *rate > 0 {
		turns = make(chan int)
	}
	go func() {
		if turns == nil {
			return
		}
		// hands out the requests in turn, at -rate a second if given
		defer close(turns)
		for k := 0; ; k++ {
			if *rate > 0 {
				at := start.Add(time.Duration(float64(k) / *rate * float64(time.Second)))
				if wait := time.Until(at); wait > 0 {
					time.Sleep(wait)
				}
			}
			if !time.Now().Before(end) {
				return
			}
			turns <- k % len(requests)
			if k%len(requests) == len(requests)-1 {
				passes.Add(1)
			}
		}
	}()
	results := make([]result, *conns)
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(r *result) {
			defer wg.Done()
			worker(u.Host, cfg, requests, turns, end, *delay, r)
		}(&results[i])
	}
	wg.Wait()
	elapsed := time.Since(start)

	var all []uint32
	var total result
	statuses := map[string]int{}
	for _, r := range results {
		for code, n := range r.statuses {
			statuses[strconv.Itoa(code)] += n
		}
		all = append(all, r.latencies...)
		total.bytes += r.bytes
		total.errConnect += r.errConnect
		total.errRead += r.errRead
		total.errWrite += r.errWrite
		total.errStatus += r.errStatus
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) uint32 {
		if len(all) == 0 {
			return 0
		}
		i := int(p / 100 * float64(len(all)))
		if i >= len(all) {
			i = len(all) - 1
		}
		return all[i]
	}
	var sum float64
	for _, l := range all {
		sum += float64(l)
	}
	mean := 0.0
	if len(all) > 0 {
		mean = sum / float64(len(all))
	}
	fields := map[string]any{
		"requests": len(all), "durationUs": elapsed.Microseconds(), "bytes": total.bytes,
		"errConnect": total.errConnect, "errRead": total.errRead, "errWrite": total.errWrite,
		"errStatus": total.errStatus, "errTimeout": 0, "meanUs": mean,
		"p50Us": pct(50), "p90Us": pct(90), "p99Us": pct(99), "maxUs": pct(100),
	}
	if *pathsFile != "" {
		fields["passes"], fields["statuses"] = passes.Load(), statuses
	}
	out, _ := json.Marshal(fields)
	fmt.Printf("BENCHJSON %s\n", out)
}

// worker keeps one connection busy until end (or until turns is closed), writing the request
// of each turn it takes (the first request when turns is nil), reconnecting after an error.
func worker(host string, cfg *tls.Config, requests [][]byte, turns <-chan int, end time.Time, delay time.Duration, r *result) {
	var conn *tls.Conn
	var br *bufio.Reader
	r.statuses = map[int]int{}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for time.Now().Before(end) {
		turn := 0
		if turns != nil {
			var ok bool
			if turn, ok = <-turns; !ok {
				return
			}
		}
		req := requests[turn]
		for conn == nil && time.Now().Before(end) {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", host, cfg)
			if err != nil {
				r.errConnect++
				time.Sleep(10 * time.Millisecond)
				continue
			}
			conn, br = c, bufio.NewReaderSize(c, 64<<10)
		}
		if conn == nil {
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		t0 := time.Now()
		if _, err := conn.Write(req); err != nil {
			r.errWrite++
			conn.Close()
			conn = nil
			continue
		}
		status, n, err := readResponse(br)
		if err != nil {
			r.errRead++
			conn.Close()
			conn = nil
			continue
		}
		r.latencies = append(r.latencies, uint32(time.Since(t0).Microseconds()))
		r.bytes += n
		r.statuses[status]++
		if status < 200 || status > 399 {
			r.errStatus++
		}
	}
}

// readResponse reads one HTTP/1.1 answer; it returns the status and the bytes read.
func readResponse(br *bufio.Reader) (int, int64, error) {
	var n int64
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, n, err
	}
	n += int64(len(line))
	parts := bytes.SplitN(bytes.TrimSpace(line), []byte(" "), 3)
	if len(parts) < 2 {
		return 0, n, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(parts[1]))
	if err != nil {
		return 0, n, fmt.Errorf("bad status line %q", line)
	}
	length := int64(-1)
	chunked := false
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return status, n, err
		}
		n += int64(len(h))
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			length, err = strconv.ParseInt(string(value), 10, 64)
			if err != nil {
				return status, n, fmt.Errorf("bad content-length %q", value)
			}
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		}
	}
	switch {
	case chunked:
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return status, n, err
			}
			n += int64(len(line))
			sizeText, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(";"))
			size, err := strconv.ParseInt(string(sizeText), 16, 64)
			if err != nil {
				return status, n, fmt.Errorf("bad chunk size %q", line)
			}
			m, err := br.Discard(int(size) + 2)
			n += int64(m)
			if err != nil {
				return status, n, err
			}
			if size == 0 {
				return status, n, nil
			}
		}
	case length >= 0:
		m, err := br.Discard(int(length))
		return status, n + int64(m), err
	default:
		return status, n, errors.New("answer without length (connection-delimited bodies are not read)")
	}
}

func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bench-front-proxy-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "front-proxy-client"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"client.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"client.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
