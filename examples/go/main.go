// A small go program, built by the go adapter and then run.
package main

import (
	"fmt"
	"runtime"
)

func main() {
	fmt.Printf("hello from %s with GOMAXPROCS=%d\n", runtime.Version(), runtime.GOMAXPROCS(0))
}
