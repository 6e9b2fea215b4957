package memory

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/internal/textterms"
)

// The rule pass: what the user said in so many words, found by patterns
// at once, before any model is asked. It reads the user's text only (the
// answer is the agent's, not the user's word) and skips questions.

// Rules runs the rule pass over a turn and returns the facts it states,
// with their source and ObservedAt (turn.At) set and no user key. Within a
// turn a later statement about a subject wins over an earlier one.
func Rules(turn Turn) []Fact {
	var out []Fact
	for _, s := range sentences(turn.UserText) {
		if s.question {
			continue
		}
		text := strings.TrimSpace(filler.ReplaceAllString(s.text, ""))
		inner, remember := stripRemember(text)
		found := nameFacts(inner)
		found = append(found, contactFacts(inner)...)
		found = append(found, preferenceFacts(inner)...)
		if len(found) == 0 && remember {
			found = noteFacts(inner)
		}
		out = append(out, found...)
	}
	for i := range out {
		out[i].SourceSessionID, out[i].SourceSeq, out[i].ObservedAt = turn.SessionID, turn.Seq, turn.At.UTC().Truncate(time.Microsecond)
	}
	return out
}

type sentence struct {
	text     string
	question bool
}

var sentenceEnd = regexp.MustCompile(`[.!?;]+(?:\s+|$)|\n+`)

// sentences splits text at sentence ends. A full stop inside a word (an
// address, a domain) does not end a sentence.
func sentences(text string) []sentence {
	var out []sentence
	start := 0
	add := func(s string, sep string) {
		s = strings.Trim(strings.TrimSpace(s), `"'“”‘’`)
		if s != "" {
			out = append(out, sentence{text: s, question: strings.Contains(sep, "?")})
		}
	}
	for _, loc := range sentenceEnd.FindAllStringIndex(text, -1) {
		add(text[start:loc[0]], text[loc[0]:loc[1]])
		start = loc[1]
	}
	add(text[start:], "")
	return out
}

// filler is what people put before a statement.
var filler = regexp.MustCompile(`^(?i:(?:oh|ok|okay|so|well|also|and|but|btw|by the way|fyi|hey|hi|hello|actually|just so you know|for the record|note|please)\b[\s,:;!-]*)+`)

var rememberIntro = regexp.MustCompile(`^(?i:(?:(?:can|could|will|would)\s+you\s+)?(?:please\s+)?remember\b(?:\s+that\b|\s*[:,])?)\s*(.+)$`)

// stripRemember takes "remember that …" off a statement.
func stripRemember(s string) (string, bool) {
	m := rememberIntro.FindStringSubmatch(s)
	if m == nil {
		return s, false
	}
	inner := strings.TrimSpace(m[1])
	first := strings.ToLower(firstWord(inner))
	switch first {
	case "when", "what", "how", "if", "who", "where", "why", "whether", "which", "me":
		return s, false // a question, or "remember me"
	}
	return inner, inner != ""
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `,.;:!?"'`)
}

func upperFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// titleCase capitalises a name typed in lower case ("sara lopez" → "Sara
// Lopez") and leaves one with capitals as typed ("McKay").
func titleCase(name string) string {
	if strings.ToLower(name) != name {
		return name
	}
	f := strings.Fields(name)
	for i, w := range f {
		f[i] = upperFirst(w)
	}
	return strings.Join(f, " ")
}

// Names.

var (
	nameIntro = regexp.MustCompile(`^(?i:my name is|my name's|my name’s|call me|i am called|i'm called|i’m called|people call me|you can call me)\s+(.+)$`)
	imIntro   = regexp.MustCompile(`^(?i:i'm|i’m|i am|im)\s+(\p{Lu}[\p{L}'’-]*(?:\s+\p{Lu}[\p{L}'’-]*){0,2})(?:\s*[,(]|\s+(?i:and|from|by|here|btw)\b|\s*$)`)
	nameWord  = regexp.MustCompile(`^\p{L}[\p{L}'’-]*$`)
)

// notNames are words that follow "I'm" or "my name is" without being a
// name ("I'm Sorry", "I'm Going", "I'm Spanish").
var notNames = textterms.Set(`not no so sorry here back fine good going just really very also still sure ok okay glad happy tired done ready
afraid in on at the a an looking trying working using thinking interested excited new busy free home out off over with from
writing asking wondering calling feeling well great hungry late early sick confused lost curious planning leaving coming
staying moving travelling traveling there this that it what who`)

// nameStop ends a name after "my name is".
var nameStop = textterms.Set(`and but by from i im i'm i’m so btw if or what who please thanks`)

func nameFacts(s string) []Fact {
	var name string
	if m := nameIntro.FindStringSubmatch(s); m != nil {
		var parts []string
		for _, raw := range strings.Fields(m[1]) {
			w := strings.TrimRight(raw, `,;:!.)`)
			if !nameWord.MatchString(w) || nameStop[strings.ToLower(w)] || len(parts) == 3 {
				break
			}
			parts = append(parts, w)
			if w != raw {
				break // punctuation ends the name
			}
		}
		name = strings.Join(parts, " ")
	} else if m := imIntro.FindStringSubmatch(s); m != nil {
		name = m[1]
	}
	if name == "" || notNames[strings.ToLower(firstWord(name))] || languages[strings.ToLower(firstWord(name))] {
		return nil
	}
	name = titleCase(name)
	return []Fact{{Subject: SubjectName, Kind: KindName, Value: name, Text: "My name is " + name}}
}

// Contacts.

const (
	reCap   = `\p{Lu}[\p{L}-]*(?:['’]\p{L}{2,}[\p{L}-]*)?`
	reAny   = `\p{L}[\p{L}-]*(?:['’]\p{L}{2,}[\p{L}-]*)?`
	reName  = `(` + reAny + `(?:\s+` + reCap + `){0,2})`
	reEmail = `([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})`
	reMail  = `(?i:e-?mail(?:\s+address)?|mail|address|email\s+id)`
	reIs    = `(?:\s+(?i:is)\s+|\s*[:=]\s*|\s+-\s+)`
)

type contactPattern struct {
	re *regexp.Regexp
	// me: the address is the user's own. loose: a lower-case name is taken
	// only at the start of the sentence (the pattern has no keyword).
	me, loose bool
}

var contactPatterns = []contactPattern{
	{re: regexp.MustCompile(`(?i:my)\s+` + reMail + reIs + reEmail), me: true},
	{re: regexp.MustCompile(reName + `['’]s\s+` + reMail + reIs + `(?:(?i:at)\s+)?` + reEmail)},
	{re: regexp.MustCompile(reMail + `\s+(?i:of|for)\s+` + reName + reIs + reEmail)},
	{re: regexp.MustCompile(`(?i:reach|email|e-mail|mail|contact|write to|message)\s+` + reName + `\s+(?i:at|on|via)\s+` + reEmail)},
	{re: regexp.MustCompile(reName + `\s*[<(]\s*` + reEmail + `\s*[>)]`), loose: true},
	{re: regexp.MustCompile(reName + reIs + `(?:(?i:at)\s+)?` + reEmail), loose: true},
}

// notContacts are words a contact pattern can catch that are not a name.
var notContacts = textterms.Set(`my his her their our your its the a an this that these those it there here which what who whom answer
email mail address contact me i mine yours reply response result output send sender recipient to from cc bcc is`)

func contactFacts(s string) []Fact {
	var out []Fact
	used := map[int]bool{} // addresses already taken, by position
	for _, p := range contactPatterns {
		for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
			emailAt := m[len(m)-2]
			if used[emailAt] {
				continue
			}
			email := strings.TrimRight(s[emailAt:m[len(m)-1]], ".")
			var name string
			if !p.me {
				name = cleanContactName(s[m[2]:m[3]], m[2] == 0, p.loose)
				if name == "" {
					continue
				}
			}
			used[emailAt] = true
			out = append(out, contactFact(name, email))
		}
	}
	return out
}

// contactFact is the fact that name's address is email; an empty name is
// the user's own address.
func contactFact(name, email string) Fact {
	if name == "" {
		return Fact{Subject: ContactPrefix + "me", Kind: KindContact, Value: email, Text: "My email is " + email}
	}
	return Fact{Subject: ContactPrefix + normalizeSubject(name), Kind: KindContact, Value: email, Text: fmt.Sprintf("%s's email is %s", name, email)}
}

// cleanContactName drops lower-case words before a capitalised name ("by
// the way Sara" → "Sara") and refuses what is not a name.
func cleanContactName(raw string, atStart, loose bool) string {
	f := strings.Fields(raw)
	for len(f) > 1 && !startsUpper(f[0]) && startsUpper(f[len(f)-1]) {
		f, atStart = f[1:], false
	}
	if len(f) == 0 || notContacts[strings.ToLower(f[0])] {
		return ""
	}
	if loose && !startsUpper(f[0]) && (!atStart || len(f) > 1) {
		return ""
	}
	return titleCase(strings.Join(f, " "))
}

func startsUpper(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

// Preferences.

var (
	prefI      = regexp.MustCompile(`^(?i:i)\s+(?i:(?:really|also|generally|usually|much|definitely|truly|actually|do|still)\s+)*(?i:(prefer|like|love|enjoy|adore|hate|dislike|detest|don't like|don’t like|do not like|can't stand|can’t stand|cannot stand|don't want|don’t want|do not want))\s+(.+)$`)
	prefWould  = regexp.MustCompile(`^(?i:i'd|i’d|i would)\s+(?i:(?:really|much)\s+)?(?i:(prefer|rather))\s+(.+)$`)
	prefAlways = regexp.MustCompile(`^(?i:(?:from now on|in future|in the future|going forward)[,\s]+)?(?i:i\s+)?(?i:(always|never))\s+(.+)$`)
)

// notObjects start an object that is a reaction, not a preference ("I like
// that", "I love how …").
var notObjects = textterms.Set(`it that this these those you your yours what how when where which who if whether so too very much him her them us me mind`)

// prefVerbs carry no topic: "always answer in Spanish" and "never use
// emojis" are about the language and emojis.
var prefVerbs = textterms.Set(`use using reply answer respond write send include add give make put be call talk speak show start end keep do go
like love prefer enjoy hate dislike want rather`)

var languages = textterms.Set(`english spanish french german italian portuguese dutch russian chinese mandarin cantonese japanese korean
arabic hindi turkish polish swedish norwegian danish finnish greek hebrew catalan ukrainian czech vietnamese thai indonesian
romanian hungarian`)

var languageUse = regexp.MustCompile(`(?i)\b(?:in|speak|speaking|answer|answers|reply|replies|respond|responses|write|writing|talk|use)\b`)

func preferenceFacts(s string) []Fact {
	var object string
	switch {
	case prefI.MatchString(s):
		object = prefI.FindStringSubmatch(s)[2]
	case prefWould.MatchString(s):
		object = prefWould.FindStringSubmatch(s)[2]
	case prefAlways.MatchString(s):
		object = prefAlways.FindStringSubmatch(s)[2]
	default:
		return nil
	}
	object = strings.TrimSpace(strings.TrimRight(object, ".!,; "))
	if object == "" || notObjects[strings.ToLower(firstWord(object))] {
		return nil
	}
	text := upperFirst(strings.TrimRight(s, ".!,; "))
	ws := words(object)
	for _, w := range ws {
		if languages[w] && (len(ws) == 1 || languageUse.MatchString(object)) {
			return []Fact{{Subject: PrefPrefix + "language", Kind: KindPreference, Value: upperFirst(w), Text: text}}
		}
	}
	topic := topicKey(object, prefVerbs, 4)
	if topic == "" {
		return nil
	}
	return []Fact{{Subject: PrefPrefix + topic, Kind: KindPreference, Value: object, Text: text}}
}

// Notes.

func noteFacts(inner string) []Fact {
	topic := topicKey(inner, nil, 8)
	if topic == "" {
		return nil
	}
	text := upperFirst(strings.TrimRight(inner, ".!,; "))
	if strings.HasPrefix(strings.ToLower(inner), "to ") {
		text = "Remember " + strings.TrimRight(inner, ".!,; ")
	}
	return []Fact{{Subject: NotePrefix + topic, Kind: KindNote, Text: text}}
}
