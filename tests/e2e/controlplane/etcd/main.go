// Command etcd runs an embedded etcd server for the end-to-end suite: one member, data in a
// folder, client URL on loopback. Debian's etcd-server is older than recent kube-apiservers want.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dir := flag.String("data-dir", "", "data directory")
	client := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback)")
	peer := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("--data-dir is required")
	}
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("invalid --listen-client-url %q: %v", *client, err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("invalid --listen-peer-url %q: %v", *peer, err)
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dir
	cfg.Name = "e2e"
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("start etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd ready on %s", cu.String())
	case <-time.After(60 * time.Second):
		e.Close()
		log.Fatal("etcd did not become ready within 60s")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Printf("etcd error: %v", err)
	}
	e.Close()
}
