// Package faults is loom's multi-replica fault test (TestFaults): 16
// clients on 4 `loom serve --store postgres` replicas through the gateway,
// while a replica is SIGKILLed between a reply and its save, another is
// SIGSTOPped, and PostgreSQL goes away for a second (through a proxy that
// cuts every connection, so the other tests sharing the server in
// `go test ./...` are not disturbed; LOOM_FAULTS_REAL_RESTART=1 restarts the
// server itself, run alone). It reports acknowledged turns lost,
// duplicated and out of order (all must be 0) and how every refusal was
// answered. It has no code of its own; run it through scripts/pg-test.sh,
// which starts a throwaway PostgreSQL and exports LOOM_TEST_PG_DSN and
// LOOM_TEST_PG_RESTART:
//
//	bash scripts/pg-test.sh go test ./bench/faults -run Faults -v
//	LOOM_FAULTS_DURATION=4m LOOM_FAULTS_REAL_RESTART=1 bash scripts/pg-test.sh go test ./bench/faults -run Faults -v -timeout 20m
package faults
