package telegram

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/internal/filefetch"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

var _ chat.FileFetcher = (*Adapter)(nil)

// maxBotDownload is the largest file the Bot API lets a bot download.
const maxBotDownload = 20 << 20

// FetchFile implements chat.FileFetcher: getFile for the document's path,
// then the download from the Bot API's file endpoint, which is the
// configured server's (the token is in its path, so no error quotes the
// URL). A file over max is refused before its download when Telegram
// says its size, and after max+1 bytes otherwise.
func (a *Adapter) FetchFile(ctx context.Context, f gh.File, max int64) ([]byte, error) {
	if f.Ref == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "telegram: the file has no file_id")
	}
	if f.Size > max || f.Size > maxBotDownload && max >= maxBotDownload {
		return nil, gh.Errorf(gh.CodePayloadTooLarge, "telegram: %s is %d bytes, over %d", f.Name, f.Size, min(max, maxBotDownload))
	}
	tf, err := a.bot.GetFile(ctx, &bot.GetFileParams{FileID: f.Ref})
	if err != nil {
		err = a.redact(err)
		switch {
		case errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "too big"):
			return nil, gh.Wrap(gh.CodePayloadTooLarge, err, "telegram: the file is too big for a bot to download")
		case errors.Is(err, bot.ErrorBadRequest):
			return nil, gh.Wrap(gh.CodeInvalid, err, "telegram: getFile refused the file")
		}
		return nil, gh.Wrap(gh.CodeUnavailable, err, "telegram: getFile failed")
	}
	if tf.FileSize > max {
		return nil, gh.Errorf(gh.CodePayloadTooLarge, "telegram: %s is %d bytes, over %d", f.Name, tf.FileSize, max)
	}
	if tf.FilePath == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "telegram: getFile gave no path to download")
	}
	// The link holds the token: filefetch's errors never quote a URL.
	data, _, err := filefetch.Fetch(ctx, filefetch.Request{Client: a.client, URL: a.bot.FileDownloadLink(tf), Allowed: a.fileHost,
		What: "telegram file " + strconv.Quote(f.Name), Max: max})
	return data, err
}

// fileHost reports whether u is on the Bot API server the adapter talks
// to (its file endpoint): nowhere else gets the token in a file link.
func (a *Adapter) fileHost(u *url.URL) bool {
	base, err := url.Parse(a.cfg.APIURL)
	return err == nil && u != nil && u.User == nil && u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host)
}
