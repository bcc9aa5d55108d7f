// gohttp: the Go net/http peer of bench/target_vs_peers.sh, bench/target_tls.sh and
// bench/load_tls.sh. Answers any path with 200 "Have Fun ~ Tester !", after an optional delay
// slept in the handler's own goroutine. With -tls-cert and -tls-key it serves HTTPS (Go's
// crypto/tls; HTTP/1.1 or h2 by ALPN, session tickets on).
package main

import (
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "HOST:PORT to listen on")
	delayMs := flag.Int("delay-ms", 0, "delay before each response, in ms")
	tlsCert := flag.String("tls-cert", "", "PEM certificate: serve HTTPS (with -tls-key)")
	tlsKey := flag.String("tls-key", "", "PEM private key of -tls-cert")
	flag.Parse()
	body := []byte("Have Fun ~ Tester !")
	delay := time.Duration(*delayMs) * time.Millisecond
	handler := func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			time.Sleep(delay) // parks this goroutine only
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write(body)
	}
	if *tlsCert != "" {
		log.Fatal(http.ListenAndServeTLS(*addr, *tlsCert, *tlsKey, http.HandlerFunc(handler)))
	}
	log.Fatal(http.ListenAndServe(*addr, http.HandlerFunc(handler)))
}
