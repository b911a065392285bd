import type { Kysely } from 'kysely';

/**
 * Annotation queue names are unique in a project, as project, log stream and template names are.
 * Queues made before share names: the oldest keeps its name, the others become "name (2)",
 * "name (3)", ... (skipping names already taken), so no queue is lost and each stays reachable.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const queues: { id: string; project_id: string; name: string }[] = await db
    .selectFrom('annotation_queues')
    .select(['id', 'project_id', 'name'])
    .orderBy('project_id')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const taken = new Set(queues.map((q) => `${q.project_id}\u0000${q.name}`));
  const kept = new Set<string>();
  for (const q of queues) {
    const key = `${q.project_id}\u0000${q.name}`;
    if (!kept.has(key)) {
      kept.add(key);
      continue;
    }
    let n = 2;
    while (taken.has(`${q.project_id}\u0000${q.name} (${n})`)) n++;
    const name = `${q.name} (${n})`;
    taken.add(`${q.project_id}\u0000${name}`);
    kept.add(`${q.project_id}\u0000${name}`);
    await db.updateTable('annotation_queues').set({ name }).where('id', '=', q.id).execute();
  }
  await db.schema
    .createIndex('annotation_queues_name')
    .unique()
    .on('annotation_queues')
    .columns(['project_id', 'name'])
    .execute();
}
