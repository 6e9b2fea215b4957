package telegram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/go-telegram/bot"

	gh "github.com/gatehouse/gatehouse"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.bot.FileDownloadLink(tf), nil)
	if err != nil {
		return nil, gh.Errorf(gh.CodeInvalid, "telegram: the file's path does not make a URL")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, a.redact(err), "telegram: downloading the file failed")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		code := gh.CodeInvalid
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			code = gh.CodeUnavailable
		}
		return nil, gh.Errorf(code, "telegram: the file download answered %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, gh.Wrap(gh.CodeUnavailable, a.redact(err), "telegram: reading the file failed")
	}
	if int64(len(data)) > max {
		return nil, gh.Errorf(gh.CodePayloadTooLarge, "telegram: %s is over %d bytes", f.Name, max)
	}
	return data, nil
}
