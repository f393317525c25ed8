// Command startup times whole processes: each NAME=COMMAND given is run
// -n times, the commands taking turns so that a busy machine slows them
// alike, and the median, 10th and 90th percentile wall times are printed
// with each median's ratio to the first command's; and the same for the
// process's CPU time (user+system), which a machine busy with other work
// disturbs less than the wall time. When a command is named "floor", the
// last two columns give each median's ratio to the floor's.
//
//	go run ./bench/cold/startup -n 101 hello=/tmp/hello 'loom=/tmp/loom --version'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 51, "runs of each command")
	flag.Parse()
	type command struct {
		name  string
		argv  []string
		times []time.Duration
		cpu   []time.Duration
	}
	var cmds []*command
	for _, arg := range flag.Args() {
		name, line, ok := strings.Cut(arg, "=")
		if !ok || strings.TrimSpace(line) == "" {
			fmt.Fprintf(os.Stderr, "startup: %q: want NAME=COMMAND\n", arg)
			os.Exit(2)
		}
		cmds = append(cmds, &command{name: name, argv: strings.Fields(line)})
	}
	if len(cmds) == 0 {
		fmt.Fprintln(os.Stderr, "usage: startup [-n N] NAME=COMMAND...")
		os.Exit(2)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
	for i := -1; i < *n; i++ { // run -1 warms the page cache and is not counted
		for _, c := range cmds {
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Stdout, cmd.Stderr = devnull, devnull
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "startup: %s: %v\n", c.name, err)
				os.Exit(1)
			}
			if i >= 0 {
				c.times = append(c.times, time.Since(start))
				c.cpu = append(c.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var floor, cpuFloor time.Duration
	for _, c := range cmds {
		slices.Sort(c.times)
		slices.Sort(c.cpu)
		if c.name == "floor" {
			floor, cpuFloor = c.times[len(c.times)/2], c.cpu[len(c.cpu)/2]
		}
	}
	var base, cpuBase time.Duration
	fmt.Printf("%-14s %9s %9s %9s %7s %9s %7s", "command", "median ms", "p10 ms", "p90 ms", "ratio", "cpu ms", "ratio")
	if floor > 0 {
		fmt.Printf(" %9s %9s", "÷floor", "cpu÷floor")
	}
	fmt.Println()
	for i, c := range cmds {
		med, cpu := c.times[len(c.times)/2], c.cpu[len(c.cpu)/2]
		if i == 0 {
			base, cpuBase = med, cpu
		}
		fmt.Printf("%-14s %9.2f %9.2f %9.2f %6.2fx %9.2f %6.2fx", c.name, ms(med), ms(c.times[len(c.times)/10]),
			ms(c.times[len(c.times)*9/10]), float64(med)/float64(base), ms(cpu), float64(cpu)/float64(cpuBase))
		if floor > 0 {
			fmt.Printf(" %8.2fx %8.2fx", float64(med)/float64(floor), float64(cpu)/float64(cpuFloor))
		}
		fmt.Println()
	}
}
