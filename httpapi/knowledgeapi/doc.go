// Package knowledgeapi serves the knowledge library (package knowledge)
// over the /v1 API, for the operator and the admin page:
//
//   - GET /v1/documents?collection=&limit= lists documents (collection,
//     name, title, media type, size, passages, source, version, added and
//     updated) and the files the folder watcher refused, with why;
//   - POST /v1/documents adds a document, as multipart/form-data (a
//     "file" part, optional "collection", "name", "title", "source"
//     fields) or JSON {name, collection, title, mediaType, content,
//     encoding: "text" | "base64"}; the collection defaults to the
//     shared one. A file the library refuses (too large, binary data
//     under a text name, an encrypted or broken PDF, no text) is answered
//     400 or 413 with the library's message, and nothing of it is stored;
//   - GET /v1/documents/{id} returns a document with its passages;
//     DELETE /v1/documents/{id} removes it;
//   - GET /v1/collections lists the collections (the shared one always);
//   - POST /v1/knowledge/recall {question, sessionId?, user?} answers what
//     a turn of that chat and person would be given, each passage with
//     its evidence, and the passages considered but not given (under the
//     floor, or past the passage or token limit) with theirs.
//
// httpapi mounts the Handler behind the API token (Config.Knowledge);
// errors are answered by Config.WriteError in the API's shape. An upload's
// body is bounded by the library's MaxDocumentBytes (plus room for the
// form or the base64), other bodies by MaxBodyBytes.
package knowledgeapi
