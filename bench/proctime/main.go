// Command proctime runs a command once, its output thrown away (or sent to
// the file $PROCTIME_OUT), and prints its wall time and its CPU time (user +
// system, from the kernel's accounting of the child) in milliseconds, to
// the microsecond. /usr/bin/time counts CPU in 10 ms steps, too coarse for
// a process that lives a few milliseconds. The bench scripts use it to time
// loom beside its floors (cat, a hello-world) in one run.
//
//	proctime CMD [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: proctime CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	if name := os.Getenv("PROCTIME_OUT"); name != "" {
		out, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "proctime:", err)
			os.Exit(1)
		}
		defer out.Close()
		cmd.Stdout = out
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, "proctime:", err)
		os.Exit(1)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("%.3f %.3f\n", float64(wall)/1e6, float64(cpu)/1e6)
}
