import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './app/App.js';
import './styles.css';

createRoot(document.getElementById('root') as HTMLElement).render(<StrictMode><BrowserRouter><App /></BrowserRouter></StrictMode>);
