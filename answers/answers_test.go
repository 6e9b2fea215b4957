package answers

import "testing"

func TestOneParagraphWhenAsked(t *testing.T) {
	answer := "## Summary\n\nThe report is ready.\n\n- It covers Q3.\n- It is 12 pages.\n"
	got := Apply("Summarise the report in one paragraph, please.", answer)
	if got != "Summary The report is ready. It covers Q3. It is 12 pages." {
		t.Fatalf("got %q", got)
	}
	if Apply("Summarise the report.", answer) != answer {
		t.Fatal("an answer was reshaped though nobody asked")
	}
}

func TestJSONCopiedExactlyIsKeptByteForByte(t *testing.T) {
	q := `Copy this exactly: {"b": 1,  "a": [1,2], "s": "\u00e9"}`
	ans := "Here it is:\n{\"a\":[1,2],\"b\":1,\"s\":\"é\"}\nDone."
	got := Apply(q, ans)
	want := "Here it is:\n{\"b\": 1,  \"a\": [1,2], \"s\": \"\\u00e9\"}\nDone."
	if got != want {
		t.Fatalf("got %q", got)
	}
	// Another object (changed meaning) is not touched.
	changed := "{\"a\":[1,2],\"b\":2,\"s\":\"é\"}"
	if Apply(q, changed) != changed {
		t.Fatal("a different object was overwritten")
	}
}

func TestTablesToLines(t *testing.T) {
	in := "Prices:\n| Item | Price |\n|---|--:|\n| Tea | 2 € |\n| Cake | 3 € |\nThat's all."
	want := "Prices:\n• Item: Tea · Price: 2 €\n• Item: Cake · Price: 3 €\nThat's all."
	if got := TablesToLines(in); got != want {
		t.Fatalf("got %q", got)
	}
	if plain := "a | b"; TablesToLines(plain) != plain {
		t.Fatal("a line with a pipe is not a table")
	}
}
