// Package pg holds benchmarks and load tests of loom over PostgreSQL: the
// memory store's queries, a render that lists memories from it, and the
// HTTP server under concurrent clients. It has no code of its own. Run it
// through scripts/pg-test.sh, which starts a throwaway server and sets
// LOOM_TEST_PG_DSN; http.sh drives real `loom serve` processes.
package pg
