package kernel

import (
	"container/list"
	"context"
	"sync"

	gh "github.com/gatehouse/gatehouse"
)

// tenants is a bounded LRU of sessions' tenants. A session's tenant never
// changes and sessions are never deleted, so a hit is always right and
// needs no read; the bound keeps memory flat however many sessions exist.
type tenants struct {
	mu  sync.Mutex
	max int
	ll  *list.List // front: most recently used
	m   map[string]*list.Element
}

type tenantEntry struct{ session, tenant string }

func newTenants(max int) *tenants {
	return &tenants{max: max, ll: list.New(), m: map[string]*list.Element{}}
}

func (c *tenants) get(session string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[session]
	if !ok {
		return "", false
	}
	c.ll.MoveToFront(e)
	return e.Value.(tenantEntry).tenant, true
}

func (c *tenants) put(session, tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[session]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.m[session] = c.ll.PushFront(tenantEntry{session, tenant})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.m, last.Value.(tenantEntry).session)
	}
}

func (c *tenants) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// SessionTenant returns the tenant of a session, from memory when the
// session was seen lately (Config.SessionCache): a tenant check, the most
// common reason to read a session, then costs no read. An unknown session
// is a CodeUnknownSession error.
func (k *Kernel) SessionTenant(ctx context.Context, id string) (string, error) {
	if t, ok := k.tenants.get(id); ok {
		return t, nil
	}
	s, err := k.st.GetSession(ctx, id)
	if err != nil {
		return "", err
	}
	k.tenants.put(s.ID, s.Tenant)
	return s.Tenant, nil
}

// KnownSession reports whether the session exists for tenant, from memory
// when it can: false (with no error) when it is unknown, or another
// tenant's.
func (k *Kernel) KnownSession(ctx context.Context, id, tenant string) (bool, error) {
	if tenant == "" {
		tenant = gh.DefaultTenant
	}
	t, err := k.SessionTenant(ctx, id)
	if gh.IsCode(err, gh.CodeUnknownSession) {
		return false, nil
	}
	return err == nil && t == tenant, err
}
