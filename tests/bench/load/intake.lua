-- wrk script for tests/bench/run.sh: POSTs one signed GitHub delivery (the
-- body and its signature are constant) with a distinct X-GitHub-Delivery per
-- request, so the worker never answers a redelivery. Counts the expected
-- answers (202 "ignored", or 401 for a wrong signature) apart from others.
-- Usage: wrk ... -s intake.lua URL -- BODY_FILE SIGNATURE DELIVERY_PREFIX [STATUS=202]

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local body = file:read("*a")
  file:close()
  prefix = args[3]
  expected = tonumber(args[4] or "202")
  counter = 0
  accepted = 0
  other = 0
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-GitHub-Event"] = "pull_request"
  wrk.headers["X-Hub-Signature-256"] = args[2]
  wrk.headers["User-Agent"] = "GitHub-Hookshot/bench"
end

function request()
  counter = counter + 1
  wrk.headers["X-GitHub-Delivery"] = string.format("%s-%d-%d", prefix, id, counter)
  return wrk.format()
end

function response(status, headers, body)
  if status == expected then
    accepted = accepted + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local ok, bad = 0, 0
  for _, thread in ipairs(threads) do
    ok = ok + thread:get("accepted")
    bad = bad + thread:get("other")
  end
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    "BENCH requests=%d accepted=%d other=%d socket_errors=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d\n",
    summary.requests, ok, bad, errors, summary.duration,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
