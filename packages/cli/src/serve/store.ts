/**
 * The demo server's store and its commands: the kvstore family's commands in
 * their `key value` shape (SET/GET, RSET/RGET, HSET/HGET, each family its own
 * map), DEL, EXISTS, PING, ECHO, DBSIZE, FLUSHALL/FLUSHDB (INFO is the
 * server's own, in server.ts); anything else
 * gets -ERR.
 */
const OK = Buffer.from('+OK\r\n');
const PONG = Buffer.from('+PONG\r\n');
const NIL = Buffer.from('$-1\r\n');
const CRLF = Buffer.from('\r\n');

type Store = Map<string, Buffer>;

export class KvStore {
  readonly families: Record<'array' | 'rbtree' | 'hash', Store> = { array: new Map(), rbtree: new Map(), hash: new Map() };

  size(): number {
    return this.families.array.size + this.families.rbtree.size + this.families.hash.size;
  }

  clear(): void {
    for (const s of Object.values(this.families)) s.clear();
  }
}

const FAMILY_OF: Record<string, ['array' | 'rbtree' | 'hash', 'set' | 'get']> = {
  SET: ['array', 'set'],
  GET: ['array', 'get'],
  RSET: ['rbtree', 'set'],
  RGET: ['rbtree', 'get'],
  HSET: ['hash', 'set'],
  HGET: ['hash', 'get'],
};

function bulk(b: Buffer): Buffer[] {
  return [Buffer.from(`$${b.length}\r\n`), b, CRLF];
}

function integer(n: number): Buffer {
  return Buffer.from(`:${n}\r\n`);
}

export function error(text: string): Buffer {
  return Buffer.from(`-ERR ${text}\r\n`);
}

/** Executes one command; pushes its reply chunks onto `out`. */
export function execute(store: KvStore, args: Buffer[], out: Buffer[]): void {
  const name = args[0].toString('latin1').toUpperCase();
  const family = FAMILY_OF[name];
  if (family) {
    const [which, op] = family;
    const map = store.families[which];
    if (op === 'set') {
      if (args.length !== 3) return void out.push(error(`wrong number of arguments for '${name.toLowerCase()}' command`));
      map.set(args[1].toString('latin1'), Buffer.from(args[2]));
      out.push(OK);
    } else {
      if (args.length !== 2) return void out.push(error(`wrong number of arguments for '${name.toLowerCase()}' command`));
      const v = map.get(args[1].toString('latin1'));
      if (v === undefined) out.push(NIL);
      else out.push(...bulk(v));
    }
    return;
  }
  switch (name) {
    case 'PING':
      out.push(args.length > 1 ? bulk(args[1]).reduce((a, b) => Buffer.concat([a, b])) : PONG);
      return;
    case 'ECHO':
      if (args.length !== 2) return void out.push(error("wrong number of arguments for 'echo' command"));
      out.push(...bulk(args[1]));
      return;
    case 'DEL':
    case 'EXISTS': {
      let n = 0;
      for (const k of args.slice(1)) {
        const key = k.toString('latin1');
        for (const m of Object.values(store.families)) {
          if (m.has(key)) {
            n++;
            if (name === 'DEL') m.delete(key);
          }
        }
      }
      out.push(integer(n));
      return;
    }
    case 'DBSIZE':
      out.push(integer(store.size()));
      return;
    case 'FLUSHALL':
    case 'FLUSHDB':
      store.clear();
      out.push(OK);
      return;
    default:
      out.push(error(`unknown command '${name.toLowerCase()}' (respbench serve is a demo/test target: SET/GET, RSET/RGET, HSET/HGET, DEL, EXISTS, PING, ECHO, DBSIZE, FLUSHALL, INFO)`));
  }
}

