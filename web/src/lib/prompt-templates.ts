/** Prompt template shapes of the API (/v2/templates, /v2/projects/{p}/templates) as the console reads them. */
import type { TemplateContent } from '../../../src/domain/prompt-templates.ts';

export interface TemplateVersion {
  id: string;
  version: number;
  template: TemplateContent;
  settings: Record<string, unknown> & { model_alias?: string; temperature?: number };
  content_changed: boolean;
  settings_changed: boolean;
  model_changed: boolean;
  lines_added: number;
  lines_edited: number;
  lines_removed: number;
  created_at: string;
  created_by_user: { email: string } | null;
}

export interface PromptTemplate {
  id: string;
  name: string;
  project_id: string | null;
  selected_version: TemplateVersion;
  all_versions?: TemplateVersion[];
  total_versions: number;
  max_version: number;
  updated_at: string;
}
