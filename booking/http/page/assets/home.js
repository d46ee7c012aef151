import { localTimes } from "./ui.js";

localTimes();
