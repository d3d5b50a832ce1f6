package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Severities as klog's text format writes them, first on each line.
const (
	severityInfo    = 'I'
	severityWarning = 'W'
	severityError   = 'E'
)

// entry is what the filter needs to know of one log entry.
type entry struct {
	severity byte
	// location is the logging call's file:line, as the format writes it:
	// the base name in text, the last directory and base name in JSON.
	location string
	// message is the text after the header (text) or "msg" (JSON).
	message string
}

// lineFormat reads and rewrites the entries of one log format.
type lineFormat interface {
	// parse returns the entry that p, one Write of the logger, holds.
	parse(p []byte) (entry, bool)
	// repeated rewrites last, the latest of count entries left out in
	// period, so that it says so.
	repeated(last []byte, count int, period time.Duration) []byte
}

// textFormat is klog's: "Lmmdd hh:mm:ss.uuuuuu threadid file:line] message".
type textFormat struct{}

// maxTextHeader bounds the search for the end of the header, so that a line
// that does not start with one is not searched through.
const maxTextHeader = 256

func (textFormat) header(p []byte) (int, bool) {
	if len(p) < 2 || !bytes.ContainsRune([]byte("IWEF"), rune(p[0])) {
		return 0, false
	}
	end := bytes.Index(p[:min(len(p), maxTextHeader)], []byte("] "))
	if end < 0 {
		return 0, false
	}
	return end, true
}

func (f textFormat) parse(p []byte) (entry, bool) {
	end, ok := f.header(p)
	if !ok {
		return entry{}, false
	}
	location := p[bytes.LastIndexByte(p[:end], ' ')+1 : end]
	return entry{
		severity: p[0],
		location: string(location),
		message:  string(bytes.TrimSuffix(p[end+2:], []byte("\n"))),
	}, true
}

// repeated keeps last's header, with its time, and wraps its message as
// syslog daemons do: "message repeated N times: [ ... ]".
func (f textFormat) repeated(last []byte, count int, period time.Duration) []byte {
	end, ok := f.header(last)
	if !ok {
		return last
	}
	message := bytes.TrimSuffix(last[end+2:], []byte("\n"))
	return fmt.Appendf(bytes.Clone(last[:end+2]), "message repeated %s in the last %s: [ %s ]\n", times(count), period, message)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// jsonFormat is component-base's JSON logger: one object per line, with
// "v" on info entries only.
type jsonFormat struct{}

func (jsonFormat) parse(p []byte) (entry, bool) {
	var fields struct {
		Caller string `json:"caller"`
		Msg    string `json:"msg"`
		V      *int   `json:"v"`
	}
	if err := json.Unmarshal(p, &fields); err != nil || fields.Msg == "" {
		return entry{}, false
	}
	e := entry{severity: severityError, location: fields.Caller, message: fields.Msg}
	if fields.V != nil {
		e.severity = severityInfo
	}
	return e, true
}

// repeated adds "repeated" and "repeatedPeriod" to last's fields.
func (jsonFormat) repeated(last []byte, count int, period time.Duration) []byte {
	trimmed := bytes.TrimRight(last, "\n")
	if !bytes.HasSuffix(trimmed, []byte("}")) {
		return last
	}
	out := bytes.Clone(trimmed[:len(trimmed)-1])
	return fmt.Appendf(out, `,"repeated":%d,"repeatedPeriod":%q}`+"\n", count, period.String())
}
