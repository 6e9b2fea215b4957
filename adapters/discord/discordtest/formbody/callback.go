package formbody

import "encoding/json"

// Callback is the body of an interaction callback (POST
// /interactions/{id}/{token}/callback), or the interactions endpoint's
// answer: the response type and its data, a message or (type 9) a modal
// (CheckModal).
type Callback struct {
	Type int             `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Message is the callback's data as a message: nil for a modal (type 9)
// and when no data (or null) was sent, an error when the data is not a
// message.
func (c Callback) Message() (*Message, error) {
	if c.Type == 9 || len(c.Data) == 0 || string(c.Data) == "null" {
		return nil, nil
	}
	m := &Message{}
	if err := json.Unmarshal(c.Data, m); err != nil {
		return nil, err
	}
	return m, nil
}
