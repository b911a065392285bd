import { type FormEvent, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { Crumbs } from '../components/Crumbs.tsx';
import { ErrorNote, Loading } from '../components/ErrorNote.tsx';
import { get } from '../lib/api.ts';
import type { Project } from '../lib/api-types.ts';
import { type Dataset, uploadDataset } from '../lib/datasets-api.ts';
import { formatCount, formatTime } from '../lib/format.ts';
import { useApi } from '../lib/use-api.ts';
import './datasets.css';

/** A JSONL or CSV file into a new dataset, with the upload's progress. */
function UploadForm({ projects }: { projects: Project[] }) {
  const navigate = useNavigate();
  const [sent, setSent] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    const file = data.get('file');
    if (!(file instanceof File) || file.size === 0) {
      setError('Choose a JSONL or CSV file');
      return;
    }
    setError(null);
    setSent(0);
    try {
      const ds = await uploadDataset(
        {
          name: String(data.get('name') ?? '').trim() || file.name.replace(/\.(jsonl|csv)$/i, ''),
          projectId: String(data.get('project') ?? '') || null,
          file,
        },
        setSent,
      );
      navigate(`/datasets/${ds.id}`);
    } catch (err) {
      setError((err as Error).message);
      setSent(null);
    }
  }
  return (
    <form className="panel dataset-upload" onSubmit={submit} aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a dataset</h2>
      <p className="muted small">
        JSON lines (one object a line) or CSV with a header line. Columns such as <code>input</code>,{' '}
        <code>output</code> (the ground truth) and <code>metadata</code> become the dataset's columns.
      </p>
      <label className="field">
        <span>File</span>
        <input type="file" name="file" accept=".jsonl,.csv,.json,text/csv" required />
      </label>
      <label className="field">
        <span>Name</span>
        <input name="name" maxLength={255} placeholder="The file's name" />
      </label>
      <label className="field">
        <span>Used in project</span>
        <select name="project" defaultValue="">
          <option value="">None (only you and admins see it)</option>
          {projects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      {sent !== null && (
        <div className="upload-progress">
          <progress value={sent} max={1} aria-label="Upload progress" />
          <span className="muted small" aria-live="polite">
            {sent < 1 ? `Uploading… ${Math.round(sent * 100)}%` : 'Uploaded; storing the rows…'}
          </span>
        </div>
      )}
      <div>
        <button type="submit" className="button primary" disabled={sent !== null}>
          Upload
        </button>
      </div>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** Every dataset the caller may see, and an upload form. */
export function DatasetsPage() {
  const datasets = useApi('datasets', () => get<{ datasets: Dataset[] }>('/v2/datasets?limit=1000'));
  const projects = useApi('projects', () => get<Project[]>('/v2/projects'));
  return (
    <>
      <Crumbs items={[{ label: 'Projects', to: '/' }, { label: 'Datasets' }]} />
      <div className="page-head">
        <h1>Datasets</h1>
        <span className="muted">Fixed inputs and ground truth to evaluate against, versioned</span>
      </div>
      <div className="datasets-layout">
        <section aria-label="Datasets">
          {datasets.error && <ErrorNote error={datasets.error} retry={datasets.reload} />}
          {!datasets.data && !datasets.error && <Loading what="the datasets" />}
          {datasets.data?.datasets.length === 0 && <p className="muted">No datasets yet.</p>}
          {datasets.data && datasets.data.datasets.length > 0 && (
            <div className="table-wrap">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col" className="num">
                      Rows
                    </th>
                    <th scope="col" className="num">
                      Version
                    </th>
                    <th scope="col" className="num wide-only">
                      Projects
                    </th>
                    <th scope="col" className="wide-only">
                      Updated
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {datasets.data.datasets.map((d) => (
                    <tr key={d.id}>
                      <td>
                        <Link to={`/datasets/${d.id}`}>{d.name}</Link>
                      </td>
                      <td className="num">{formatCount(d.num_rows)}</td>
                      <td className="num">{d.current_version_index}</td>
                      <td className="num wide-only">{formatCount(d.project_count)}</td>
                      <td className="nowrap wide-only">{formatTime(d.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </section>
        <UploadForm projects={projects.data ?? []} />
      </div>
    </>
  );
}
