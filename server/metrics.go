package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	renders  *prometheus.CounterVec

	// renderHit and renderMiss are renders' two children, resolved once.
	renderHit, renderMiss prometheus.Counter
	// series holds each (method, route, status)'s counter and histogram
	// once resolved, so a request costs no label hashing, no status
	// formatting and no lock on the vectors: a handful of sync.Map reads.
	series sync.Map // seriesKey → *series
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_http_requests_total", Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "loom_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its handler's return, by route pattern.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "loom_render_total", Help: "Prompt renders by outcome: hit (the builder's cached result), miss (rendered anew).",
		}, []string{"cache"}),
	}
	m.renderHit, m.renderMiss = m.renders.WithLabelValues("hit"), m.renders.WithLabelValues("miss")
	reg.MustRegister(m.requests, m.latency, m.renders,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe counts a request and its latency. route is a registered pattern
// (or "unmatched") and method is whatever the client sent; a method outside
// the standard ones is counted as "other", so a client cannot make the
// series grow without bound.
func (m *metrics) observe(method, route string, status int, d time.Duration) {
	if !standardMethod(method) {
		method = "other"
	}
	k := seriesKey{method, route, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(method, route, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(route),
		})
	}
	sr := v.(*series)
	sr.requests.Inc()
	sr.latency.Observe(d.Seconds())
}

func standardMethod(m string) bool {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return true
	}
	return false
}
