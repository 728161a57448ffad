package publish

import "time"

// SetClock makes w read the time from now.
func SetClock(w *WebServer, now func() time.Time) { w.now = now }
