package uploads

import "github.com/gatehouse/gatehouse/gateway/chat"

// UseFetcher sets Config.Fetcher after construction: the gateway, which
// fetches the files, is built after this service, which it hands
// /library to. Call it before the gateway starts; until then no file is
// fetched.
func (s *Service) UseFetcher(f func(platform string) (chat.FileFetcher, bool)) { s.cfg.Fetcher = f }
