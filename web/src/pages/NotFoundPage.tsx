import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <div className="empty">
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. <Link to="/">Go to your projects</Link>.
      </p>
    </div>
  );
}

/** A console URL naming a project that does not exist, or one the caller is not a member of. */
export function ProjectNotFound() {
  return (
    <div className="empty">
      <h1>Project not found</h1>
      <p>
        No project has this address, or you are not one of its collaborators (an owner of the project can add
        you). <Link to="/">Go to your projects</Link>.
      </p>
    </div>
  );
}
