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

// workspaceMetric is one series per open workspace, read when /metrics is
// scraped.
type workspaceMetric struct {
	name, help string
	kind       prometheus.ValueType
}

// workspaceCollector reports metrics of every open workspace for which
// read returns true, read's values in metrics' order.
type workspaceCollector struct {
	wss   *workspaces
	descs []*prometheus.Desc
	kinds []prometheus.ValueType
	read  func(*Workspace) ([]float64, bool)
}

func newWorkspaceCollector(wss *workspaces, metrics []workspaceMetric, read func(*Workspace) ([]float64, bool)) *workspaceCollector {
	c := &workspaceCollector{wss: wss, read: read}
	for _, m := range metrics {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, []string{"workspace"}, nil))
		c.kinds = append(c.kinds, m.kind)
	}
	return c
}

func (c *workspaceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *workspaceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ws := range c.wss.list() {
		values, ok := c.read(ws)
		if !ok {
			continue
		}
		for i, v := range values {
			ch <- prometheus.MustNewConstMetric(c.descs[i], c.kinds[i], v, ws.Name)
		}
	}
}

// newExtractMetrics reports the extraction queues of every open workspace.
func newExtractMetrics(wss *workspaces) *workspaceCollector {
	return newWorkspaceCollector(wss, []workspaceMetric{
		{"loom_extract_queue_depth", "Sessions waiting for extraction (one queue entry per session).", prometheus.GaugeValue},
		{"loom_extract_coalesced_total", "Extraction jobs folded into one already queued for the same session.", prometheus.CounterValue},
		{"loom_extract_dropped_total", "Extraction jobs thrown away (always 0: a full queue waits).", prometheus.CounterValue},
		{"loom_extract_failed_total", "Extraction jobs that failed.", prometheus.CounterValue},
		{"loom_extract_done_total", "Extraction jobs finished.", prometheus.CounterValue},
	}, func(ws *Workspace) ([]float64, bool) {
		ws.mu.Lock()
		e := ws.engine
		ws.mu.Unlock()
		if e == nil || e.Extract == nil {
			return nil, false
		}
		st := e.Extract.Stats()
		return []float64{float64(st.Queued), float64(st.Coalesced), float64(st.Dropped), float64(st.Failed), float64(st.Done)}, true
	})
}

// newEmbeddingMetrics reports the embedding worker of every open
// workspace that has one (loom.yaml's memory.embeddings), so that an
// endpoint that keeps failing shows outside the turns it slows to
// words-only recall.
func newEmbeddingMetrics(wss *workspaces) *workspaceCollector {
	return newWorkspaceCollector(wss, []workspaceMetric{
		{"loom_embedding_embedded_total", "Memories given a vector by the embedding worker.", prometheus.CounterValue},
		{"loom_embedding_failures_total", "Batches the embedding endpoint failed (each tried again later).", prometheus.CounterValue},
		{"loom_embedding_skipped_total", "Memories passed over after failing alone; the next sweep tries them again.", prometheus.CounterValue},
		{"loom_embedding_failing", "1 while the embedding worker's last call failed, else 0.", prometheus.GaugeValue},
	}, func(ws *Workspace) ([]float64, bool) {
		st, ok := ws.Builder.EmbeddingStats()
		if !ok {
			return nil, false
		}
		failing := 0.0
		if st.LastError != nil {
			failing = 1
		}
		return []float64{float64(st.Embedded), float64(st.Failures), float64(st.Skipped), failing}, true
	})
}
