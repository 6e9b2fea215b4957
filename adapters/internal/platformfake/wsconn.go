package platformfake

import (
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeWait bounds one websocket write.
const writeWait = 5 * time.Second

// Upgrade accepts a websocket from any origin (platform clients send
// their platform's, which the default check refuses). On failure the
// upgrader has answered the HTTP error.
func Upgrade(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	return up.Upgrade(w, r, nil)
}

// WSConn is the server's side of a websocket, its writes serialized and
// each bounded by a deadline. Close and control frames need no lock.
type WSConn struct {
	WS  *websocket.Conn
	wmu sync.Mutex
}

// WriteJSON writes v as one text frame of JSON.
func (c *WSConn) WriteJSON(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.WS.SetWriteDeadline(time.Now().Add(writeWait))
	return c.WS.WriteJSON(v)
}

// WriteText writes msg as one text frame.
func (c *WSConn) WriteText(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.WS.SetWriteDeadline(time.Now().Add(writeWait))
	return c.WS.WriteMessage(websocket.TextMessage, msg)
}

// CloseWith sends a close frame with code and text, then closes.
func (c *WSConn) CloseWith(code int, text string) {
	c.wmu.Lock()
	_ = c.WS.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.WS.Close()
}
