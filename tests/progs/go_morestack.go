// Goroutines recursing deep enough to grow their stacks many times:
// runtime.morestack copies a goroutine's stack to a new, larger one and
// restarts the function that ran out of stack at its entry. Workers yield
// (runtime.Gosched) and hand tokens over channels inside the recursion, so
// goroutines are suspended and resumed, on any OS thread, mid-recursion.
// Prints its own counts of main.deep and main.leaf calls.
//
// usage: go_morestack [workers [rounds [depth]]]
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

var deepCalls, leafCalls int64

//go:noinline
func leaf(n int) int {
	atomic.AddInt64(&leafCalls, 1)
	return n & 7
}

// deep recurses with a frame of about 200 bytes, so a deep recursion
// outgrows the goroutine's stack repeatedly.
//
//go:noinline
func deep(n int, handoff chan int) int {
	atomic.AddInt64(&deepCalls, 1)
	var pad [24]int
	pad[n%24] = n
	if n == 0 {
		return leaf(pad[0])
	}
	if n%64 == 0 {
		runtime.Gosched()
	}
	if n%256 == 0 {
		handoff <- n      // a peer receives: this goroutine may sleep here
		n2 := <-handoff   // and resumes, perhaps on another thread
		_ = n2
	}
	return deep(n-1, handoff) + pad[(n+1)%24] + leaf(n)
}

type job struct {
	depth   int
	handoff chan int
	wg      *sync.WaitGroup
}

var jobs = make(chan job)
var sum int64

// worker takes no arguments (`go worker()` needs no wrapper), so it is its
// goroutine's first function.
//
//go:noinline
func worker() {
	j := <-jobs
	atomic.AddInt64(&sum, int64(deep(j.depth, j.handoff)))
	j.wg.Done()
}

// relay passes every token it receives back: the workers' handoffs.
func relay(handoff chan int, stop chan struct{}) {
	for {
		select {
		case v := <-handoff:
			handoff <- v
		case <-stop:
			return
		}
	}
}

func arg(i, def int) int {
	if len(os.Args) > i {
		v, err := strconv.Atoi(os.Args[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, "go_morestack: bad number", os.Args[i])
			os.Exit(2)
		}
		return v
	}
	return def
}

func main() {
	workers, rounds, depth := arg(1, 4), arg(2, 3), arg(3, 3000)
	stop := make(chan struct{})
	handoffs := make([]chan int, workers)
	for w := range handoffs {
		handoffs[w] = make(chan int)
		go relay(handoffs[w], stop)
	}
	// A new goroutine starts with a small stack: every round's workers grow
	// theirs from the start.
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go worker()
			jobs <- job{depth + r*workers + w, handoffs[w], &wg}
		}
		wg.Wait()
	}
	close(stop)
	fmt.Printf("deep %d leaf %d sum %d\n", deepCalls, leafCalls, sum)
}
