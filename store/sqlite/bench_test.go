package sqlite_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/kernel/kerneltest"
	"github.com/gatehouse/gatehouse/store/storetest"
)

// BenchmarkEdgeCommit compares a kernel edge commit with a bare insert into
// an equivalent table on the same single writer connection.
func BenchmarkEdgeCommit(b *testing.B) { kerneltest.BenchEdgeCommit(b, storetest.SQLiteTarget) }
