// robfig/cron v3's standard 5-field parser and SpecSchedule.Next, as KEDA v2.20.2's cron
// trigger uses them, for tests/core/keda/cron_differential_test.ts: one JSON case a line on
// stdin ({"spec", "zone", "at": unix ms}), one JSON answer a line on stdout ({"next": unix ms
// or null, "error"}).
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
	// the zone rules built in, not the machine's: the same answers on every machine
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

type input struct {
	Spec string `json:"spec"`
	Zone string `json:"zone"`
	At   int64  `json:"at"`
}

type output struct {
	Next  *int64 `json:"next"`
	Error string `json:"error,omitempty"`
}

func main() {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var c input
		var o output
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			o.Error = err.Error()
		} else if s, err := parser.Parse(c.Spec); err != nil {
			o.Error = err.Error()
		} else if loc, err := time.LoadLocation(c.Zone); err != nil {
			o.Error = err.Error()
		} else if next := s.Next(time.UnixMilli(c.At).In(loc)); !next.IsZero() {
			ms := next.UnixMilli()
			o.Next = &ms
		}
		_ = enc.Encode(o)
	}
}
