// go-nethttp: the seed articles' Go server. net/http's default server, one goroutine per
// connection, the delay a time.Sleep in the handler.
//
//	go-nethttp HOST PORT DELAY_MS [THREADS]
//
// THREADS > 0 sets GOMAXPROCS; 0 or absent keeps Go's default (the machine's cores).
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"
)

var body = []byte("Have Fun ~ Tester !")

func main() {
	if len(os.Args) < 4 || len(os.Args) > 5 {
		fmt.Fprintln(os.Stderr, "usage: go-nethttp HOST PORT DELAY_MS [THREADS]")
		os.Exit(2)
	}
	delayMs, err := strconv.Atoi(os.Args[3])
	if err != nil || delayMs < 0 {
		log.Fatalf("DELAY_MS must be an integer >= 0, not %q", os.Args[3])
	}
	if len(os.Args) == 5 {
		threads, err := strconv.Atoi(os.Args[4])
		if err != nil || threads < 0 {
			log.Fatalf("THREADS must be an integer >= 0, not %q", os.Args[4])
		}
		if threads > 0 {
			runtime.GOMAXPROCS(threads)
		}
	}
	delay := time.Duration(delayMs) * time.Millisecond

	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Write(body)
	})
	addr := net.JoinHostPort(os.Args[1], os.Args[2])
	log.Printf("go-nethttp listening on %s (delay %d ms, GOMAXPROCS %d)", addr, delayMs, runtime.GOMAXPROCS(0))
	log.Fatal(http.ListenAndServe(addr, nil))
}
