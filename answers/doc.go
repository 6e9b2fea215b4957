// Package answers holds the narrow safeguards applied to a model's final
// answer before it is committed or delivered: one paragraph when the user
// asked for one, a JSON object the user asked to have copied kept byte for
// byte, and tables rewritten as lines for chat platforms that cannot show
// them. Each is a pure function of the texts.
package answers
