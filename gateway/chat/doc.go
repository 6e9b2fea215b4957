// Package chat is the contract between the gateway and a chat platform's
// adapter, so that adapters depend on it and not on the gateway itself.
//
// It owns what an adapter implements ([Adapter], and optionally
// [CardFormatter] and [ReasonAsker]) and what it hands updates to
// ([Sink]: receives, presses, commands, with their results
// [ReceiveResult], [PressResult], [CommandReply] and the receive log's
// outcomes and drop reasons); what the dispatcher asks an adapter to send
// ([Outgoing], [Card], [Button], [Limits]) and how a platform refuses
// ([SendError]); the data a card's buttons carry ([ButtonData],
// [ParseButtonData], the Choice constants); how a gate's card looks on a
// platform ([CardFor], from the words of package cards); and the
// platform table: each adapter package exports a [Platform] (settings,
// session prefix, constructor) and registers it ([Register]), so
// [SessionFor] derives every chat's session and the binary offers the
// platform, and gh.PlatformSession tells a chat's session from others, so
// that gh.CheckEdgeSession keeps the edges outside the platforms (the
// kernel's EdgeCommit and CreateSession ask it) from writing one. Platform ids an adapter hands on are checked by [CheckID].
//
// No I/O: adapters (adapters/*) and the gateway (package gateway) do it.
package chat
