/**
 * SQLite's indexes for the identifier filters (actorId, resourceId), led by the event's chunk of
 * seqs: (seq >> ID_CHUNK_BITS, environment, identifier), seq following as the rowid. An index led by
 * (environment, identifier) put each new event's entry in a random leaf of the whole index: one page
 * written to the WAL per event and index, and hundreds of distinct pages for each checkpoint to copy
 * into the file and sync. Led by the chunk, a commit's entries land among the newest chunk's few
 * dozen leaves, which stay in the page cache and are copied once per checkpoint (bench/ROUNDS.md,
 * thirty-eighth round).
 *
 * An identifier's events are read chunk by chunk, one index probe each (eventStore.readChunks): a
 * rare identifier costs one probe per chunk of the range searched, about a thousand for a million
 * events. PostgreSQL keeps its (environment, identifier, seq) b-trees.
 *
 * Migration 005 builds these indexes with this value, and the queries must name the same
 * expression for SQLite to use them: a new value needs a new migration.
 */
export const ID_CHUNK_BITS = 10;

export type IdColumn = 'actor_id' | 'resource_id';
export const ID_COLUMNS: readonly IdColumn[] = ['actor_id', 'resource_id'];

export const chunkOf = (seq: number): number => Math.floor(seq / 2 ** ID_CHUNK_BITS);
/** The first seq of a chunk. */
export const chunkStart = (chunk: number): number => chunk * 2 ** ID_CHUNK_BITS;

const indexName = (column: IdColumn) => `events_chunk_${column}`;

export const createIdChunkIndexSql = (column: IdColumn): string => `CREATE INDEX ${indexName(column)} ON events ((seq >> ${ID_CHUNK_BITS}), environment, ${column})`;
export const dropIdChunkIndexSql = (column: IdColumn): string => `DROP INDEX IF EXISTS ${indexName(column)}`;

/**
 * The seqs of an identifier's events, in `order`: bound are the chunks to probe (a JSON array), the
 * environment, the identifier, the lowest and the highest seq, and how many. One probe of the index
 * per chunk; the matches are few or the chunks are few (eventStore.readChunks), so their sort is small.
 */
export const idChunkSeqsSql = (column: IdColumn, order: 'asc' | 'desc'): string =>
  `SELECT seq FROM events INDEXED BY ${indexName(column)} WHERE (seq >> ${ID_CHUNK_BITS}) IN (SELECT value FROM json_each(?)) AND environment = ? AND ${column} = ? AND seq BETWEEN ? AND ? ORDER BY seq ${order === 'asc' ? 'ASC' : 'DESC'} LIMIT ?`;
