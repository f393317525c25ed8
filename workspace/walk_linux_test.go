package workspace_test

import (
	"testing"

	"github.com/loomctx/loom/workspace"
)

// The per-component O_NOFOLLOW walk keeps the same rules as openat2.
func TestDoorWithoutOpenat2(t *testing.T) {
	defer workspace.WithoutOpenat2()()
	t.Run("reads", TestDoor)
	t.Run("writes", TestWritesStayInside)
	t.Run("fifo", TestFIFONeverBlocks)
	t.Run("readback", TestWriteReadBack)
}
