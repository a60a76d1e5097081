/**
 * The retail fixture environment's scripted players: an agent that follows the policy for its
 * two tasks, and the user simulator's model, each answering what the last message says.
 *
 * @module
 */
import type { EngineCall, Script } from "../../lib/scripted_engine/mod.ts";
import type { TestGateway } from "../_gateway.ts";
import { toolCall } from "./_rollout.ts";

/** The text of the prompt's last user message (a user's words or a tool's result). */
function lastUser(prompt: string): string {
  return prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
}

/** True for a prompt of the user simulator's conversation. */
export const isUserSimulator = (prompt: string) => prompt.includes("You are a customer");

/**
 * An agent that follows the retail policy for task 0 (cancel #W1002) and task 1 (the status of
 * #W1001), answering what the last message says.
 */
export const retailAgent: Script = (_call, promptText) => {
  const prompt = promptText();
  const last = lastUser(prompt);
  if (last.includes('"status":"cancelled"')) return "Your order #W1002 is cancelled.";
  if (last.includes('"status":"pending"')) {
    return "Order #W1002 is pending. Shall I cancel it as no longer needed?";
  }
  if (last.includes('"status":"delivered"')) return "Your order #W1001 has been delivered.";
  if (last.includes("mia_chen_1")) return "Which order would you like to cancel?";
  if (last.includes("My email is mia.chen")) {
    return toolCall("find_user_id_by_email", { email: "mia.chen@example.com" });
  }
  if (last.includes("#W1002. I don't need")) {
    return toolCall("get_order_details", { order_id: "#W1002" });
  }
  if (last.includes("Yes, please go ahead.")) {
    return toolCall("cancel_pending_order", { order_id: "#W1002", reason: "no longer needed" });
  }
  if (last.includes("has my order #W1001")) {
    return toolCall("get_order_details", { order_id: "#W1001" });
  }
  return "How can I help you?";
};

/** The user simulator's model for task 1: asks about #W1001, then stops once told. */
export const userModel: Script = (_call, promptText) => {
  const last = lastUser(promptText());
  return last.includes("delivered") ? "###STOP###" : "Hello, has my order #W1001 been delivered?";
};

/** The agent, or the user simulator's model, by the conversation. */
export const retailScript: Script = (call, promptText) =>
  isUserSimulator(promptText()) ? userModel(call, promptText) : retailAgent(call, promptText);

/** The engine calls of the agent's conversation, in order. */
export function agentCalls(gw: TestGateway): EngineCall[] {
  const tokenizer = gw.deps.tokenizer;
  return gw.engine.calls.filter((call) =>
    call.output !== undefined && !isUserSimulator(tokenizer.decode(call.inputIds))
  );
}
