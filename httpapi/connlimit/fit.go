package connlimit

// minConns is the least Fit lowers the cap to: below it the gateway could
// not serve anyway, and saying so in the log is more use than refusing to
// start.
const minConns = 16

// Fit returns the connection cap and reserve that fit under limit open
// files with headroom kept free for everything else the process opens;
// ok is true when they already fit (or the limit is 0: unknown). Without
// it a flood runs the process out of files, and then the database, the
// spool and every new request fail with "too many open files".
func Fit(maxConns, reserve, headroom int, limit uint64) (int, int, bool) {
	need := uint64(maxConns) + uint64(reserve) + uint64(headroom)
	if limit == 0 || need <= limit {
		return maxConns, reserve, true
	}
	budget := int64(limit) - int64(headroom)
	// The reserve takes at most a quarter of what is left, so most of the
	// files still serve requests.
	r := min(int64(reserve), max(budget/4, 1))
	m := max(budget-r, minConns)
	return int(min(m, int64(maxConns))), int(r), false
}
