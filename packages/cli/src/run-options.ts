/**
 * The flags of one run, shared by the top-level command and a study (whose
 * file may set each of them and whose command line overrides them).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { LIMITS } from './engine-js/limits.js';
import { TLS12_CIPHERS, TLS13_CIPHERSUITES } from './engine-js/transport.js';
import { MODES, RECONNECT_DEFAULTS, type RawMixCommand } from './validate.js';

/**
 * --command/--weight/--command-key-pattern: a --weight or
 * --command-key-pattern applies to the --command before it, so the three
 * are read in command-line order into one list (`commands`). A setting with
 * no --command before it is remembered in `orphanMixSetting` (a usage error).
 * The list is stored as `commands`, not `command`: that name is the command
 * words after the options.
 */
function mixOptions(): Option[] {
  const mix: RawMixCommand[] = [];
  const command = new Option('--command <template>', 'a command of a weighted mix (repeat it): a template as --set-cmd takes, e.g. \'GET __key__\'; replaces --mode').argParser((t: string) => {
    mix.push({ template: t });
    return mix;
  });
  command.attributeName = () => 'commands';
  const setting = (flag: string, field: 'weight' | 'keyPattern', help: string) =>
    new Option(`${flag} <${field === 'weight' ? 'n' : 'pattern'}>`, help).argParser((v: string, previous: unknown) => {
      const last = mix[mix.length - 1];
      if (!last) return flag;
      if (last[field] !== undefined) return `${flag} twice`;
      last[field] = v;
      // Commander stores '' for undefined: false keeps "no orphan" falsy, an earlier message stays.
      return previous || false;
    });
  const weight = setting('--weight', 'weight', 'with --command: its share of the requests, an integer >= 1 (default 1); applies to the --command before it');
  weight.attributeName = () => 'orphanMixSetting';
  const pattern = setting('--command-key-pattern', 'keyPattern', 'with --command: the key pattern of the --command before it (uniform | sequential | gaussian | zipf; default --key-pattern)');
  pattern.attributeName = () => 'orphanMixSetting';
  return [command, weight, pattern];
}

export function addRunOptions(cmd: Command): Command {
  cmd
    .option('-h, --host <ip>', 'server host (-h as in redis-benchmark and redis-cli; help is --help)', '127.0.0.1')
    .option('-p, --port <port>', `server port (${LIMITS.port.join('..')})`, '6379')
    .option('-s, --socket <path>', 'connect to a unix socket instead of --host/--port')
    .option('--tls', 'connect over TLS (verified against the system\'s roots plus --cacert/--cacertdir)')
    .option('--cacert <file>', 'TLS: PEM file of CA certificates to trust as well')
    .option('--cacertdir <dir>', 'TLS: folder of PEM CA certificate files to trust as well')
    .option('--cert <file>', 'TLS: client certificate (PEM), with --key')
    .option('--key <file>', 'TLS: private key of --cert (PEM)')
    .option('--insecure', 'TLS: do not verify the server\'s certificate')
    .option('--sni <name>', 'TLS: server name to send and to check the certificate against (default: --host)')
    .option('--tls-ciphers <list>', `TLS 1.2 ciphers, ':'-separated; only these, which both engines have: ${TLS12_CIPHERS.join(', ')}`)
    .option('--tls-ciphersuites <list>', `TLS 1.3 suites, ':'-separated; only these, which both engines have: ${TLS13_CIPHERSUITES.join(', ')}`)
    .option('--mode <mode>', MODES.join(' | '), 'mixed')
    .option('-n, --requests <n>', 'total requests over all connections (not per second, and not per client as memtier\'s --requests); not with --duration', '1000000')
    .option('-P, --pipeline <n>', 'requests in flight per connection (see --pipeline-mode)', '64')
    .option('--pipeline-mode <mode>', 'window: a new request goes out as each reply comes (default of a run) | batch: send -P requests, wait for all their replies, send the next -P (redis-benchmark\'s -P; the default of -t and a command on the line)')
    .option('-r, --keyspace <n>', 'keys are drawn from [0, keyspace)', '100000')
    .option('--key-pattern <pattern>', 'uniform | sequential | gaussian | zipf (deterministic per seed); memtier\'s R:R, S:S, G:G are uniform, sequential, gaussian', 'uniform')
    .option('--key-stddev <n>', 'gaussian: standard deviation in keys (default: keyspace / 6)')
    .option('--zipf-exponent <s>', 'zipf: exponent s > 0; larger is more skewed', '0.99')
    .option('-d, --value-size <n>', 'value bytes, or a range MIN-MAX (size derived from the key)', '32')
    .option('--set-ratio <0..100>', 'mixed mode: percentage of writes (reads: 100 - this)', '50')
    .option('--set-cmd <cmd>', 'write command: a name (NAME key value) or a template with __key__ __data__ __rand_int__', 'SET')
    .option('--get-cmd <cmd>', 'read command: a name (NAME key) or a template with __key__', 'GET')
    .option('--multi-key-get <n>', 'reads are MGET of n keys, each checked by --verify-get (memtier\'s --multi-key-get); instead of --get-cmd')
    .option('--key-prefix <prefix>', 'key prefix; keys are <prefix><index>', 'bench:key:')
    .option('--seed <n>', `PRNG seed ${LIMITS.seed.join('..')}; fix it to repeat a run (default: from the clock, printed)`)
    .option('--verify-get', 'check every read reply against the value written for its key', false)
    .option('--value-generation <n>', `a number ${LIMITS.valueGeneration.join('..')} mixed into every value (default 0): write with N+1 over what N wrote, and --verify-get catches a server that kept the old value`)
    .option('-c, --connections <n>', 'connections; each has its own key stream and share of the requests', '1')
    .option('--threads <n>', 'native engine worker threads (the JS engine runs on one)')
    .option('--io <backend>', 'native engine I/O: auto (io_uring where the kernel allows it, else epoll; TLS stays on epoll), uring, epoll')
    .addOption(new Option('--engine <engine>', 'auto (native if it loads, else js) | native | js').default('auto'))
    .option('--timeout <duration>', 'per-request reply timeout, e.g. 500ms, 10s (whole ms); 0 turns it off', '10s')
    .option('--no-preload', 'get mode: read what is already there instead of writing the keys first')
    .option('--duration <duration>', 'run for this long (e.g. 30s) instead of a count of requests (-n is refused beside it)')
    .option('--warmup <duration>', 'send load for this long first, left out of every figure')
    .option('--ramp-connections <start:step:every>', 'with --duration: open start connections, then step more every every (e.g. 2:2:5s), up to -c; the series shows connections per interval')
    .option('--rate <n>', 'open loop: total requests per second on a schedule; latency from the intended send time')
    .option('-a, --pass <password>', 'AUTH with this password (never printed); REDISCLI_AUTH keeps it out of ps')
    .option('--user <name>', 'ACL user: AUTH user password (needs a password)')
    .option('--dbnum <n>', 'SELECT this database after connecting')
    .option('-3, --resp3', 'speak RESP3 (HELLO 3); default RESP2')
    .option('--reconnect', 'a connection that drops mid-run (server restart, CLIENT KILL, failover) is opened again and goes on; what it had in flight counts as lost')
    .option('--reconnect-attempts <n>', `with --reconnect: attempts per drop before the run ends, a connection opened again that closes before any reply counting as one (default ${RECONNECT_DEFAULTS.attempts})`)
    .option('--reconnect-backoff <duration>', `with --reconnect: wait after a failed attempt, doubled after each, at most 5s (default ${RECONNECT_DEFAULTS.backoffMs}ms)`)
    // For tests of RESP3 push frames from a real server (invalidations while a run reads); not a user-facing setting yet.
    .addOption(new Option('--client-tracking', 'with -3: CLIENT TRACKING on in the handshake').hideHelp())
    .option('--cluster', 'Redis Cluster: discover the primaries from --host/--port (or --cluster-node), one socket per primary per connection, each request to its key\'s slot owner; with -t the suite\'s keys are hash-tagged (key:{n}:…) as redis-benchmark --cluster\'s')
    .option('--read-from <where>', 'with --cluster: where reads (the get side) go: primary (default), replica (READONLY connections to a replica of each slot\'s primary) or any (primary or replica, spread per connection); writes always go to the primary')
    .option('--cluster-node <host:port>', 'with --cluster: a seed node to discover the cluster from; repeat it, the first that answers is used', (v: string, prev: string[] = []) => [...prev, v])
    .option('-u, --uri <uri>', 'redis://[user[:pass]@]host[:port][/db], rediss://… (TLS), redis+cluster://… (a cluster seed, as --cluster), unix:///path[?db=N]; -a, --user, --dbnum given win over its parts; -h, -p or -s beside it are refused (both would name the server)');
  for (const o of mixOptions()) cmd.addOption(o);
  for (const o of memtierAliases()) cmd.addOption(o);
  return cmd;
}

/**
 * memtier_benchmark's spellings, hidden from --help, each mapped to the flag
 * of ours that means the same (its attribute name), converted from memtier's
 * unit where it differs. `--key-pattern R:R` needs no alias (validate.ts
 * reads memtier's patterns), `--ratio` is read by validate.ts (it becomes a
 * mix), and memtier's per-client `--requests` is not ours: -n stays the
 * total (said in --help and, beside these flags, once on stderr).
 */
function memtierAliases(): Option[] {
  const wholeNumber = (flag: string, unit: string, convert: (n: number) => string) => (v: string) => {
    if (!/^\d+$/.test(String(v).trim())) throw new InvalidArgumentError(`${flag} takes ${unit}, as memtier_benchmark's does`);
    return convert(Number(String(v).trim()));
  };
  const alias = (flags: string, attribute: string, parse: (v: string) => string, help: string) => {
    const o = new Option(flags, help).argParser(parse).hideHelp();
    o.attributeName = () => attribute;
    return o;
  };
  return [
    // memtier's --test-time is whole seconds.
    alias('--test-time <secs>', 'duration', wholeNumber('--test-time', 'whole seconds', (n) => `${n}s`), 'memtier: --duration in seconds'),
    alias('--data-size <bytes>', 'valueSize', (v) => v, 'memtier: -d/--value-size'),
    // memtier draws keys from key-minimum (0) to key-maximum inclusive: that is max + 1 keys.
    alias('--key-maximum <n>', 'keyspace', wholeNumber('--key-maximum', 'a whole number', (n) => String(n + 1)), 'memtier: -r/--keyspace is key-maximum + 1'),
    new Option('--ratio <set:get>', "memtier: writes to reads, e.g. 1:10 (a mix of --set-cmd and --get-cmd weighted so)").hideHelp(),
  ];
}
