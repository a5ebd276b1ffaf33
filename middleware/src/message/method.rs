//! Method names mcp-chain acts on, as constants (never literals in logic).

pub const INITIALIZE: &str = "initialize";
pub const PING: &str = "ping";
pub const SERVER_DISCOVER: &str = "server/discover";
/// A 2026-07-28 client's stream of the change notifications it opted in to.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";

pub const TOOLS_LIST: &str = "tools/list";
pub const TOOLS_CALL: &str = "tools/call";
pub const RESOURCES_LIST: &str = "resources/list";
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
pub const RESOURCES_READ: &str = "resources/read";
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
pub const PROMPTS_LIST: &str = "prompts/list";
pub const PROMPTS_GET: &str = "prompts/get";
pub const COMPLETION_COMPLETE: &str = "completion/complete";
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";

pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
pub const ROOTS_LIST: &str = "roots/list";
pub const ELICITATION_CREATE: &str = "elicitation/create";

pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";

/// Fetches the result of a task-augmented request (2025-11-25): for a
/// `tools/call` run as a task, this carries the tool's result.
pub const TASKS_RESULT: &str = "tasks/result";
/// A task's state (2025-11-25 and the 2026-07-28 tasks extension); in the
/// extension a completed task's state inlines the call's `result`, and one
/// waiting on input carries `inputRequests`.
pub const TASKS_GET: &str = "tasks/get";
/// A task cancelled, and the tasks a receiver holds (2025-11-25).
pub const TASKS_CANCEL: &str = "tasks/cancel";
pub const TASKS_LIST: &str = "tasks/list";
/// The client's answers to a task's `inputRequests` (tasks extension).
pub const TASKS_UPDATE: &str = "tasks/update";
/// A task's full state pushed by the server, as `tasks/get` would give it
/// (tasks extension).
pub const NOTIFICATION_TASKS: &str = "notifications/tasks";
