// Prints, for each line on stdin (an expression, optionally a tab and the equivalent robfig
// should read instead), the days in Nov-Dec 2026 on which robfig/cron v3's standard parser (the
// one Kubernetes CronJob uses) fires at least once, as a '#'/'.' strip. Part of generate.sh.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		expr := strings.TrimSpace(cols[len(cols)-1])
		if expr == "" {
			continue
		}
		s, err := cron.ParseStandard(expr)
		if err != nil {
			fmt.Printf("ERR %v\n", err)
			continue
		}
		days := map[int]bool{}
		for t := s.Next(start.Add(-time.Second)); !t.IsZero() && t.Before(end); t = s.Next(t) {
			days[int(t.Sub(start).Hours()/24)] = true
		}
		var b strings.Builder
		for d := 0; d < 61; d++ {
			if days[d] {
				b.WriteByte('#')
			} else {
				b.WriteByte('.')
			}
		}
		fmt.Println(b.String())
	}
}
