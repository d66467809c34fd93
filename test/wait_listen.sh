# Sourced by test scripts that start a server and then a client against it.
# wait_listen PORT: returns once a TCP socket listens on PORT (0) or after ~10 s (1), so that
# a client started right after is not refused on a loaded machine (a fixed sleep was).
wait_listen() {
	_tries=0
	while [ $_tries -lt 100 ]; do
		ss -ltn "sport = :$1" 2>/dev/null | grep -q ":$1 " && return 0
		sleep 0.1
		_tries=$((_tries + 1))
	done
	echo "wait_listen: nothing listens on port $1 after 10 s" >&2
	return 1
}
