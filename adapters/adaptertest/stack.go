package adaptertest

import (
	"context"
	"testing"

	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
)

// Stack is the whole gateway the suite drives, wired to one adapter and
// its fake platform. This package does not build it (it never starts
// turns); internal/testing/stacktest does, and hands it over through NewStack.
type Stack struct {
	Ctx     context.Context
	Store   store.Store
	Kernel  *kernel.Kernel
	Model   *modeltest.OpenAI
	Gates   *gates.Service
	Adapter chat.Adapter
	Fake    Fake
	// Posted reports how many times the danger tool post_note has run.
	Posted func() int32
}

// StackOptions adjust a Stack.
type StackOptions struct {
	// Allowed are user handles allowed on the platform. Defaults to alice.
	Allowed []string
	// Approvers are user handles named as approvers of every tool
	// (GATEHOUSE_APPROVERS); ApproversAllowed keeps the rule from before
	// approvers instead (GATEHOUSE_APPROVERS=allowed). Defaults to none:
	// the requester alone decides.
	Approvers        []string
	ApproversAllowed bool
	// ApprovalChat is the handle of a chat every card is also sent to
	// (GATEHOUSE_APPROVAL_CHAT). Defaults to none.
	ApprovalChat string
	// GrantableNotes makes post_note offer "Approve for this chat", its
	// bound the note's text (a grant covers posting the same note again).
	GrantableNotes bool
	// ChatModels are the selections /model lets a chat pick
	// (GATEHOUSE_CHAT_MODELS). Defaults to the fake model alone.
	ChatModels string
}

// NewStack starts a whole gateway around the adapter and fake that
// factory makes, stopped when the test ends (internal/testing/stacktest.Stack).
type NewStack func(t testing.TB, factory Factory, o StackOptions) Stack
